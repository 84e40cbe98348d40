/**
 * The errors of the event side, each with its disposition (core/errors.ts): a gap or a
 * failing projection or reaction halts its partition; the others fail the batch, so the
 * trigger retries it, idempotently. Expected outcomes (a duplicate skipped, a gap flagged, a
 * malformed record dead-lettered) are values, not errors.
 */
import { KafkaAggregatesError } from '../core/errors.ts';
import type { SourcePosition } from '../core/wire.ts';

/** Which projection or reaction an error is about. */
export interface ConsumerRef {
  readonly kind: 'projection' | 'reaction';
  readonly name: string;
}

/** An event's version is more than one past the version applied for its aggregate, under the `halt` policy. */
export class EventGapError extends KafkaAggregatesError {
  static override readonly disposition = 'halt-partition';
  override readonly name = 'EventGapError';
  constructor(
    readonly consumer: ConsumerRef,
    /** Row id of the projection row, or the aggregate of the reaction checkpoint. */
    readonly item: string,
    readonly aggregateType: string,
    readonly aggregateId: string,
    /** Version applied for the aggregate (0 when none). */
    readonly appliedVersion: number,
    /** Version of the event that arrived instead of `appliedVersion + 1`. */
    readonly eventVersion: number,
    /** Where that event is: nothing from here on in its partition was applied. */
    readonly position: SourcePosition,
    options?: ErrorOptions,
  ) {
    super(
      `${consumer.kind} ${consumer.name}, item ${item}: ${aggregateType} ${aggregateId} has version ${appliedVersion} applied, ` +
        `but the next event has version ${eventVersion} (versions ${appliedVersion + 1}..${eventVersion - 1} missing), ` +
        `at ${position.topic}-${position.partition} offset ${position.offset}; that partition halts there`,
      options,
    );
  }
}

/** A projection's `rowId` or `evolve`, or a reaction's `react`, threw or returned something unusable. */
export class ConsumerFailedError extends KafkaAggregatesError {
  static override readonly disposition = 'halt-partition';
  override readonly name = 'ConsumerFailedError';
  constructor(
    readonly consumer: ConsumerRef,
    readonly eventId: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(`${consumer.kind} ${consumer.name} failed on event ${eventId}: ${message}`, options);
  }
}

/** Too many lost races on one read-model item. */
export class ItemConflictRetriesExhaustedError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'ItemConflictRetriesExhaustedError';
  constructor(
    readonly pk: string,
    readonly sk: string,
    attempts: number,
    options?: ErrorOptions,
  ) {
    super(`read model ${pk} / ${sk}: still conflicting after ${attempts} re-applications`, options);
  }
}

/** The registered projections or reactions cannot run together (bad or duplicate names, unknown types). */
export class InvalidDefinitionError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'InvalidDefinitionError';
}

/**
 * The read-models table has no control item, yet the event trigger has already handled events:
 * the table lost its items (the local emulator restarted) while the consumer group kept its
 * offsets. Applying the next events would meet a gap on every row. Retryable: the event side
 * holds until the read models are rebuilt up to where the trigger stands.
 */
export class ReadModelsBehindLogError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'ReadModelsBehindLogError';
  constructor(
    readonly tableName: string,
    readonly groupId: string,
  ) {
    super(
      `table ${tableName} is behind the events topic (no control item, but consumer group ${groupId} has handled events): ` +
        'rebuild the read models (kafka-aggregates rebuild --read-models, or the snapshot rebuild with {"readModels": true}); events wait meanwhile',
    );
  }
}

/** A read-models rebuild holds the event side. Retryable: events wait until it has caught up. */
export class ReadModelsRebuildingError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'ReadModelsRebuildingError';
  constructor(readonly tableName: string) {
    super(`the read models in ${tableName} are being rebuilt; events wait until the rebuild has caught up`);
  }
}
