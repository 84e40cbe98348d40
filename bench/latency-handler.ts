/**
 * The command side as the latency benchmark runs it: as bench/ours-handler.ts, with warm heads
 * on or off (`useWarmHeads`, before `configure`), so that one run compares the two.
 */
import { composeCommandSide } from '../functions/compose/command-side.ts';
import { tables } from '../functions/topology.ts';
import { benchHandler } from './handler-kit.ts';

let warmHeads = true;

/** Whether the next `configure` keeps warm heads (functions/heads/head-cache.ts). */
export const useWarmHeads = (on: boolean): void => {
  warmHeads = on;
};

const kit = benchHandler('latency', ({ dynamo, kafka, targets, onShutdown }) => {
  const side = composeCommandSide({
    kafka,
    dynamo,
    names: { topics: targets.topics, tables: { aggregates: targets.tableName, readModels: tables.readModels.name } },
  });
  onShutdown(() => side.close());
  return warmHeads ? side.process : side.processor({ headCache: { maxEntries: 0, maxBytes: 0 } });
});

/** See handler-kit.ts. */
export const { configure, handler, shutdown, stats } = kit;
