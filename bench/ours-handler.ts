/**
 * The command side as the benchmark runs it: composed as functions/handlers/commands.ts
 * composes it (functions/compose/command-side.ts), without Powertools logging and metrics, on the
 * benchmark's own table and topics, with counted DynamoDB requests.
 */
import { composeCommandSide } from '../functions/compose/command-side.ts';
import { tables } from '../functions/topology.ts';
import { benchHandler } from './handler-kit.ts';

const kit = benchHandler('ours', ({ dynamo, kafka, targets, onShutdown }) => {
  const side = composeCommandSide({
    kafka,
    dynamo,
    names: { topics: targets.topics, tables: { aggregates: targets.tableName, readModels: tables.readModels.name } },
  });
  onShutdown(() => side.close());
  return side.process;
});

/** See handler-kit.ts. */
export const { configure, handler, shutdown, stats } = kit;
