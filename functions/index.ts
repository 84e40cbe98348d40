/**
 * The public surface: everything a deployment's own code (its aggregates, projections,
 * reactions and upcasters) imports, and nothing of the runtime (trigger payloads, heads,
 * releases, dead letters, adapters). The example domain imports only from here, and a lint
 * rule keeps it so (eslint.config.js). The schema library is beside it, functions/schema.ts
 * (imported as `* as z`), and so is the test kit, functions/testing/.
 */

/** Aggregates: the decider (decide, evolve, initial state), its schemas, rejections and upcasters. */
export {
  defineAggregate,
  isRejection,
  reject,
  type AggregateDefinition,
  type AnyAggregate,
  type DecideContext,
  type Decision,
  type EventAtRevision,
  type InvariantBreach,
  type Message,
  type Rejection,
  type SchemasOf,
  type UpcastContext,
  type Upcaster,
  type Upcasters,
} from './core/aggregate.ts';

/** Projections: read models kept from the events topic. */
export {
  defineProjection,
  type AnyProjection,
  type Consumes,
  type DomainEvent,
  type EventMeta,
  type FlaggedGap,
  type GapPolicy,
  type ProjectionDefinition,
  type ProjectionGapPolicy,
} from './core/projection.ts';

/** Reactions: events that issue commands. */
export {
  commandTo,
  defineReaction,
  type AnyReaction,
  type Reacted,
  type ReactionCommand,
  type ReactionDefinition,
} from './core/reaction.ts';

/** An event as it is stored on the events topic, as invariant checks read it. */
export type { EventRecord } from './core/wire.ts';
