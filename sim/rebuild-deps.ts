/**
 * What the simulated rebuilds run against (sim/steps.ts): the aggregates rebuild (and `verify`)
 * and the read-models rebuild, over the world's tables and every generation of its topics, with
 * the code deployed for the rebuild.
 */
import { MemoryBatchPublisher } from '../functions/adapters/memory/publishers.ts';
import { MemoryTopicLogs } from '../functions/adapters/memory/topic-log.ts';
import type { RebuildDeps } from '../functions/rebuild/rebuild-aggregates.ts';
import type { ReadModelsRebuildDeps } from '../functions/rebuild/rebuild-read-models.ts';
import { reactions } from '../functions/reactions/index.ts';
import { simNow } from './clock.ts';
import { deployments } from './code-versions.ts';
import { generationPositions, positionsByPartition } from './generation-positions.ts';
import { holdTriggers } from './trigger.ts';
import { TOPICS, WEEK_MS, type World } from './world.ts';

/** The aggregates rebuild's deps: `live` leaves the command side running (a CLI rebuild beside `npm start`). */
export const rebuildDeps = (world: World, live: boolean, checkpointEvery: number): RebuildDeps => ({
  aggregates: deployments[world.code.rebuild],
  heads: world.heads,
  eventLog: world.eventLog(),
  publisher: new MemoryBatchPublisher(world.cluster, TOPICS, world.scheduler),
  gate: live ? { pause: () => Promise.resolve(), resume: () => Promise.resolve() } : holdTriggers(world.commandTriggers, world.scheduler),
  commandsTrigger: { positions: () => positionsByPartition(world.generations(world.commandTriggers)) },
  commandLog: new MemoryTopicLogs(world.cluster, world.scheduler),
  dedupeWindowMs: WEEK_MS,
  checkpointEvery,
  checkpointIntervalMs: Number.MAX_SAFE_INTEGER,
  writeConcurrency: 4,
  parks: world.park,
});

/** The read-models rebuild's deps. */
export const readModelsRebuildDeps = (world: World): ReadModelsRebuildDeps => ({
  aggregates: deployments[world.code.rebuild],
  // The projection as deployed (failing while `failingFor` names an account), with the event side's parks.
  projections: world.versions.projections(world.summary),
  reactions,
  readModels: world.readModels,
  parking: { store: world.eventPark, attempts: world.parking ? 1 : Infinity, now: simNow },
  eventLog: world.eventLog(),
  trigger: world.eventTriggers.length === 1 ? world.group('events') : generationPositions(world.generations(world.eventTriggers)),
});
