/**
 * The layers of functions/ are lint rules (eslint.config.js): these cases show that a wrong
 * arrow fails `npm run lint` and a right one passes, with the project's own configuration.
 */
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';

// Type information is not needed for import rules, and the files below do not exist.
const eslint = new ESLint({ overrideConfig: tseslint.configs.disableTypeChecked });

const restricted = async (file: string, source: string): Promise<string[]> => {
  const [result] = await eslint.lintText(source, { filePath: file });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
};

describe('the layers of functions/ and the operator tools', () => {
  it.each([
    ['functions/event/wrong.ts', "import { ReadModelsTable } from '../adapters/dynamodb/read-models-table.ts';"],
    ['functions/event/wrong.ts', "import { createCommandProcessor } from '../command/process-batch.ts';"],
    ['functions/command/wrong.ts', "import { AggregatesTable } from '../adapters/dynamodb/aggregates-table.ts';"],
    ['functions/command/wrong.ts', "import { names } from '../config.ts';"],
    ['functions/rebuild/wrong.ts', "import { createCommandProcessor } from '../command/process-batch.ts';"],
    ['functions/rebuild/wrong.ts', "import { commitAggregate } from '../command/commit-aggregate.ts';"],
    ['functions/adapters/dynamodb/wrong.ts', "import { replayLog } from '../../rebuild/replay.ts';"],
    ['functions/command-api/wrong.ts', "import { decideAggregate } from '../command/decide-aggregate.ts';"],
    ['functions/projections/wrong.ts', "import { createEventApplier } from '../event/process-batch.ts';"],
    ['functions/core/wrong.ts', "import { aggregates } from '../domain/index.ts';"],
    ['functions/core/wrong.ts', "import { Kafka } from 'kafkajs';"],
    ['functions/domain/account/wrong.ts', "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';"],
    ['functions/domain/account/wrong.ts', "import { defineAggregate } from '../../core/aggregate.ts';"],
    ['functions/domain/wrong.ts', "import { registry } from '../core/registry.ts';"],
    ['functions/index.ts', "import { createCommandProcessor } from './command/process-batch.ts';"],
    ['functions/testing/wrong.ts', "import { ReadModelsTable } from '../adapters/dynamodb/read-models-table.ts';"],
    ['functions/testing/wrong.ts', "import { fold } from '../event/fold.ts';"],
    ['functions/command/wrong.ts', "import { given } from '../testing/index.ts';"],
    ['functions/adapters/kafka/wrong.ts', "import { composeCommandSide } from '../../compose/command-side.ts';"],
    ['functions/adapters/memory/wrong.ts', "import { commitAggregate } from '../../command/commit-aggregate.ts';"],
    ['functions/heads/wrong.ts', "import { decideAggregate } from '../command/decide-aggregate.ts';"],
    ['functions/heads/wrong.ts', "import { AggregatesTable } from '../adapters/dynamodb/aggregates-table.ts';"],
    ['functions/heads/wrong.ts', "import { createEventApplier } from '../event/process-batch.ts';"],
    ['local/cli/wrong.ts', "import { AggregatesTable } from '../../functions/adapters/dynamodb/aggregates-table.ts';"],
    ['local/system/wrong.ts', "import { createKafka } from '../../functions/adapters/kafka/clients.ts';"],
    ['chaos/wrong.ts', "import { TopicLog } from '../functions/adapters/kafka/topic-log.ts';"],
  ])('refuses %s: %s', async (file, source) => {
    expect(await restricted(file, `${source}\nexport const used = [${source.match(/{ (\w+) }/)?.[1]}];\n`)).toHaveLength(1);
  });

  it.each([
    ['functions/event/right.ts', "import { itemId } from './ports.ts';"],
    ['functions/command/right.ts', "import { ControlRecord } from '../control/control.ts';"],
    ['functions/domain/account/right.ts', "import { defineAggregate } from '../../index.ts';"],
    ['functions/domain/right.ts', "import { account } from './account/index.ts';"],
    ['functions/index.ts', "import { defineAggregate } from './core/aggregate.ts';"],
    ['functions/testing/right.ts', "import { upcastEvent } from '../core/upcast.ts';"],
    ['functions/rebuild/right.ts', "import { Head } from '../heads/head.ts';"],
    ['functions/command/right.ts', "import { HeadCache } from '../heads/head-cache.ts';"],
    ['functions/heads/right.ts', "import { ControlRecord } from '../control/control.ts';"],
    ['functions/rebuild/right.ts', "import { createEventApplier } from '../event/process-batch.ts';"],
    ['functions/command-api/right.ts', "import { decodeCommand } from '../command/decode.ts';"],
    ['functions/adapters/dynamodb/right.ts', "import { HeadsStore } from '../../heads/ports.ts';"],
    ['functions/adapters/memory/right.ts', "import { HeadsStore } from '../../heads/ports.ts';"],
    ['functions/adapters/kafka/right.ts', "import { BatchPublisher } from '../../command/ports.ts';"],
    ['functions/handlers/right.ts', "import { composeCommandSide } from '../compose/command-side.ts';"],
    ['local/cli/right.ts', "import { composeOperator } from '../../functions/compose/operator.ts';"],
    ['bench/right.ts', "import { AggregatesTable } from '../functions/adapters/dynamodb/aggregates-table.ts';"],
  ])('lets %s import %s', async (file, source) => {
    expect(await restricted(file, `${source}\nexport const used = [${source.match(/{ (\w+) }/)?.[1]}];\n`)).toEqual([]);
  });
});
