/**
 * The command side under policy `park` over the in-memory ports, for the park tests: a live
 * processor with the buggy account (test/support/buggy-account.ts) or other code, and the
 * operator's deps for a release or discard, over one system, park store and publisher.
 */
import { MemoryBatchPublisher } from '../../functions/adapters/memory/publishers.ts';
import { MemoryParkStore } from '../../functions/adapters/memory/park-store.ts';
import { MemoryGenerationPositions, MemoryTopicLog, MemoryTopicLogs } from '../../functions/adapters/memory/topic-log.ts';
import type { BatchPublisher } from '../../functions/command/ports.ts';
import { createCommandProcessor } from '../../functions/command/process-batch.ts';
import type { AnyAggregate } from '../../functions/core/aggregate.ts';
import { aggregates } from '../../functions/domain/index.ts';
import type { ParkOperatorDeps } from '../../functions/park/release.ts';
import { buggy } from './buggy-account.ts';
import { WEEK_MS } from './decide.ts';
import { MemorySystem } from './memory-system.ts';
import { command } from './msk.ts';

/** The topics of a MemorySystem. */
export const PARK_TOPICS = { commands: 'commands', events: 'events', results: 'results', deadLetter: 'dead-letter' } as const;

/** A system whose command side parks after `attempts`, with `park` as its store; `chunk`: the operator's step. */
export const commandParkSetup = (options: { attempts?: number; park?: MemoryParkStore; chunk?: number } = {}) => {
  const { attempts = 1, park = new MemoryParkStore(), chunk } = options;
  const system = new MemorySystem();
  const publisher = new MemoryBatchPublisher(system.cluster, PARK_TOPICS);
  /** A live processor over the system, with `heads` (default the system's) and `code` (default the buggy account). */
  const processor = (code: readonly AnyAggregate[] = buggy, heads: MemorySystem['heads'] = system.heads) =>
    createCommandProcessor({
      aggregates: code,
      heads,
      publisher,
      eventLog: new MemoryTopicLog(system.cluster, PARK_TOPICS.events),
      commandLog: new MemoryTopicLogs(system.cluster),
      commandsTrigger: new MemoryGenerationPositions(system.cluster, 'commands-trigger'),
      dedupeWindowMs: WEEK_MS,
      keptResultsMs: WEEK_MS,
      parking: { store: park, attempts },
    });
  const operator = (code: readonly AnyAggregate[] = aggregates, out: BatchPublisher = publisher): ParkOperatorDeps => ({
    aggregates: code,
    heads: system.heads,
    park,
    releases: { add: (tp, release) => system.heads.addRelease(tp, release) },
    publisher: out,
    dedupeWindowMs: WEEK_MS,
    keptResultsMs: WEEK_MS,
    ...(chunk === undefined ? {} : { chunk }),
  });
  return { system, park, publisher, processor, operator };
};

/** Opens account `id` (commandId `<id>-open`). */
export const open = (id: string) => command(id, 'OpenAccount', { owner: id }, { commandId: `${id}-open` });
/** Deposits `amount` into `id` (commandId `<id>-d<n>`). */
export const deposit = (id: string, amount: number, n: number) => command(id, 'Deposit', { amount }, { commandId: `${id}-d${n}` });
