/**
 * Where the event side halts a partition, and how a halt is told: to the trigger as its
 * partial batch response (`batchItemFailures`), to people as an error naming the record.
 */
import { partialBatchResponse, type PartialBatchResponse } from '../core/batch-response.ts';
import { EventChainError, type EventFault } from '../core/event-reader.ts';
import type { MskEvent } from '../core/trigger-event.ts';
import { topicPartition, type SourcePosition } from '../core/wire.ts';
import type { KafkaAggregatesError } from '../core/errors.ts';
import { EventGapError } from './errors.ts';
import type { GapFound, ItemPlan } from './fold.ts';

/**
 * Where a partition stops, and why: a gap under `halt` (`gap`), a record this code cannot
 * read that no operator release skips (`unreadable`, an isChainFault fault), or an event a
 * projection's or reaction's code fails on (`failed`).
 */
export type Halt =
  | { readonly cause: 'gap'; readonly position: SourcePosition; readonly gap: GapFound }
  | { readonly cause: 'unreadable'; readonly position: SourcePosition; readonly fault: EventFault }
  | { readonly cause: 'failed'; readonly position: SourcePosition; readonly error: KafkaAggregatesError };

/**
 * The halts of a summary as the MSK trigger's partial batch response (core/batch-response.ts):
 * every record of a halted partition, from the halt to the end of the delivered batch.
 */
export const batchItemFailures = (halted: readonly Halt[], delivered: MskEvent): PartialBatchResponse =>
  partialBatchResponse(
    Object.values(delivered.records),
    halted.map((halt) => halt.position),
  );

/** The error that says where a gap halts its partition. */
export const gapError = (gap: GapFound): EventGapError =>
  new EventGapError(gap.consumer, gap.item, gap.aggregateType, gap.aggregateId, gap.appliedVersion, gap.eventVersion, gap.position);

/** The error that says where and why a partition halts: EventGapError for a gap, EventChainError for a record this code cannot read, the consumer's (ConsumerFailedError) for failing user code. */
export const haltError = (halt: Halt): KafkaAggregatesError =>
  halt.cause === 'gap' ? gapError(halt.gap) : halt.cause === 'unreadable' ? new EventChainError(halt.fault) : halt.error;

/** An error's own fields (a ConsumerFailedError's `consumer` and `eventId`), without its name. */
const fieldsOf = (error: KafkaAggregatesError): Record<string, unknown> => {
  const fields: Record<string, unknown> = { ...error };
  delete fields.name;
  return fields;
};

/** What to do about each cause of halt, as the log line says it. */
const REMEDY: Record<Halt['cause'], string> = {
  gap: 'gap: the partition halts here until the missing events are applied, or an operator releases it (kafka-aggregates skip --pass-gap)',
  unreadable:
    'unreadable event: the partition halts here until code that reads it is deployed, or an operator skips it (kafka-aggregates skip)',
  failed:
    'a projection or reaction fails on this event: the partition halts here until fixed code is deployed, or an operator skips it (kafka-aggregates skip)',
};

/**
 * The log line of a halt. Its `halt` key (`partition`, `offset`, `cause`, `reason`: the
 * error's `name: message`) is how a halt is found in the function's log, by an operator on
 * AWS and by the local emulator (local/trigger/halt-log.ts) alike; the rest names the gap,
 * the fault or the failing consumer. Failing code is an error; a gap or an unreadable event
 * (waiting for events or a deployment) a warning.
 */
export const haltLogLine = (
  halt: Halt,
): { readonly level: 'warn' | 'error'; readonly message: string; readonly attributes: Record<string, unknown> } => {
  const error = haltError(halt);
  const details = halt.cause === 'gap' ? { gap: halt.gap } : halt.cause === 'unreadable' ? { fault: halt.fault } : fieldsOf(halt.error);
  return {
    level: halt.cause === 'failed' ? 'error' : 'warn',
    message: REMEDY[halt.cause],
    attributes: {
      halt: {
        partition: topicPartition(halt.position),
        offset: halt.position.offset,
        cause: halt.cause,
        reason: `${error.name}: ${error.message}`,
      },
      ...details,
    },
  };
};

/** An item's halt, if its fold stopped at a gap under `halt` or at an event its code fails on. */
export const haltOf = (p: ItemPlan): Halt | undefined =>
  p.halt !== undefined
    ? { cause: 'gap', position: p.halt.position, gap: p.halt }
    : p.failed === undefined
      ? undefined
      : { cause: 'failed', ...p.failed };

/** The first halt of each partition of a batch: what precedes it is applied, nothing from it on. */
export class FirstHalts {
  private readonly first = new Map<string, Halt>();

  /** Records `halt`, unless its partition halts earlier already. */
  add(halt: Halt): void {
    const tp = topicPartition(halt.position);
    const known = this.first.get(tp);
    if (known === undefined || halt.position.offset < known.position.offset) this.first.set(tp, halt);
  }

  /** Whether `p` precedes its partition's halt (or its partition does not halt). */
  before(p: SourcePosition): boolean {
    return p.offset < (this.first.get(topicPartition(p))?.position.offset ?? Infinity);
  }

  /** The halts, by partition. */
  list(): Halt[] {
    return [...this.first.values()].sort((a, b) => topicPartition(a.position).localeCompare(topicPartition(b.position)));
  }
}
