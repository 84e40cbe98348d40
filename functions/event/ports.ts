/**
 * What the event side (and the projection rebuild) declare of their storage and output:
 * the identity of a read-model item (a projection's row, a reaction's checkpoint per source
 * aggregate), the item as stored with its versions and revision, the batched read and the
 * conditional write, and the publisher of reactions' commands. The DynamoDB and Kafka
 * adapters implement them; nothing here touches a service.
 */
import { aggregateKey } from '../core/aggregate.ts';
import { KafkaAggregatesError } from '../core/errors.ts';
import type { DeadLetter } from '../core/dead-letter.ts';
import type { FlaggedGap } from '../core/projection.ts';
import type { Release } from '../core/release.ts';
import type { CommandEnvelope } from '../core/wire.ts';

/** An item's conditional write lost: another writer changed it first. Carries what that writer left. */
export class RevisionConflictError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'RevisionConflictError';
  constructor(
    readonly key: ItemKey,
    readonly expectedRevision: number,
    /** The item as the winning writer left it (undefined when it is gone). */
    readonly current: StoredItem | undefined,
    options?: ErrorOptions,
  ) {
    super(`read model ${key.pk} / ${key.sk}: expected revision ${expectedRevision}, found ${current?.revision ?? 'none'}`, options);
  }
}

/** Primary key of an item. */
export interface ItemKey {
  readonly pk: string;
  readonly sk: string;
}

/** A projection row or a reaction checkpoint, as stored. */
export interface StoredItem {
  /** The projection's row, or the reaction's state for one aggregate. */
  readonly data: unknown;
  /** Per `aggregateKey`, the version applied. */
  readonly versions: Readonly<Record<string, number>>;
  /** Per `topic-partition`, the last offset applied: rows that dedupe per partition only. */
  readonly offsets?: Readonly<Record<string, number>>;
  /** The most recent flagged gaps (skip-and-flag), oldest first. */
  readonly gaps: readonly FlaggedGap[];
  /** Every gap ever flagged on the item. */
  readonly gapCount: number;
  /** The most recent events whose effect the item refused (fold.ts, `Refusal`), oldest first; absent: none. */
  readonly refused?: readonly RefusedFlag[];
  /** Every event the item ever refused; absent: none. */
  readonly refusedCount?: number;
  /** Writes so far; 0 for an item that does not exist. */
  readonly revision: number;
}

/**
 * An event the item did not take, because the store would refuse the item with it (a string
 * that is not well-formed Unicode, a number or nesting DynamoDB cannot hold, an item too
 * large) or a reaction derived a command no edge accepts. The event stays on the log.
 */
export interface RefusedFlag {
  /** The event's aggregate (`type#id`) and version. */
  readonly aggregate: string;
  readonly version: number;
  /** What was wrong (`MalformedUnicode`, `ItemTooLarge`, `InvalidCommand`, …). */
  readonly code: string;
}

/** Key of a projection's row. */
export const projectionRowKey = (projection: string, rowId: string): ItemKey => ({ pk: projection, sk: rowId });

/** Partition key of a reaction's checkpoints. */
export const reactionCheckpointPk = (reaction: string): string => `~reaction#${reaction}`;

/** Key of a reaction's checkpoint for one source aggregate. */
export const reactionCheckpointKey = (reaction: string, aggregateType: string, aggregateId: string): ItemKey => ({
  pk: reactionCheckpointPk(reaction),
  sk: aggregateKey(aggregateType, aggregateId),
});

/** Whether the read models are in step with the events topic. */
export interface ReadModelsControl {
  /** `ready`: in step, the event handler applies events. `rebuilding`: a rebuild holds the event handler. */
  readonly status: 'ready' | 'rebuilding';
  /** Writes so far: the optimistic-concurrency token of the control item. */
  readonly revision: number;
}

/** One string per key, for maps. */
export const itemId = (key: ItemKey): string => JSON.stringify([key.pk, key.sk]);

/** What one batched read of the event side returns. */
export interface BatchSnapshot {
  /** The items found, by `itemId`. */
  readonly items: Map<string, StoredItem>;
  /** The control item, undefined when the table has none. */
  readonly control: ReadModelsControl | undefined;
  /** The operator releases of each partition asked for (empty lists for none). */
  readonly releases: Map<string, Release[]>;
}

/** The control item's conditional write lost: someone else changed it first. */
export class ControlConflictError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'ControlConflictError';
  constructor(
    readonly tableName: string,
    readonly expectedRevision: number,
    options?: ErrorOptions,
  ) {
    super(`the control item of ${tableName} is no longer at revision ${expectedRevision}: another writer changed it`, options);
  }
}

/** The read-models store: what the event side and the projection rebuild need of it. */
export interface ReadModels {
  /** Its name, for errors and logs. */
  readonly tableName: string;
  /** One consistent read of a batch's items, the control item and the releases of its partitions. */
  readBatch(keys: readonly ItemKey[], partitions: readonly string[]): Promise<BatchSnapshot>;
  /** Writes an item if it is still at `expectedRevision` (0: absent); a {@link RevisionConflictError} otherwise. */
  write(key: ItemKey, next: Omit<StoredItem, 'revision'>, expectedRevision: number): Promise<void>;
  /** One item by consistent read, undefined when absent. */
  get(key: ItemKey): Promise<StoredItem | undefined>;
  /** Every item under a partition key, in sort-key order. */
  query(pk: string): Promise<{ readonly key: ItemKey; readonly item: StoredItem }[]>;
  /** Deletes one item. */
  delete(key: ItemKey): Promise<void>;
  /** Deletes every item under a partition key; returns how many. */
  wipe(pk: string): Promise<number>;
  /** The control item, undefined when the table has none. */
  getControl(): Promise<ReadModelsControl | undefined>;
  /** Sets the control item if it is still at `expectedRevision`; a {@link ControlConflictError} otherwise. */
  putControl(status: ReadModelsControl['status'], expectedRevision: number): Promise<ReadModelsControl>;
}

/** Everything one event batch publishes: the reactions' commands and dead letters. */
export interface EventSideOutput {
  readonly commands: readonly CommandEnvelope[];
  readonly deadLetters: readonly DeadLetter[];
  /** The W3C `traceparent` of the batch's events that had one, by eventId: the commands they cause (`causationId`) carry a span of that trace. */
  readonly traces?: ReadonlyMap<string, string>;
}

/** Publishes an event batch's output in one go; throws when not acknowledged, so no checkpoint moves. */
export interface EventSidePublisherPort {
  publish(output: EventSideOutput): Promise<void>;
}
