/**
 * Where the event side halts a partition, and how a halt is told: to the trigger as its
 * partial batch response (`batchItemFailures`), to people as an error naming the record.
 */
import { partialBatchResponse, type PartialBatchResponse } from '../core/batch-response.ts';
import { EventChainError, type EventFault } from '../core/event-reader.ts';
import type { MskEvent } from '../core/trigger-event.ts';
import { topicPartition, type SourcePosition } from '../core/wire.ts';
import { EventGapError } from './errors.ts';
import type { GapFound } from './fold.ts';

/**
 * Where a partition stops, and why: a gap under `halt` (`gap`), or a record this code cannot
 * read that no operator release skips (`unreadable`, an isChainFault fault).
 */
export type Halt =
  | { readonly cause: 'gap'; readonly position: SourcePosition; readonly gap: GapFound }
  | { readonly cause: 'unreadable'; readonly position: SourcePosition; readonly fault: EventFault };

/**
 * The halts of a summary as the MSK trigger's partial batch response (core/batch-response.ts):
 * every record of a halted partition, from the halt to the end of the delivered batch.
 */
export const batchItemFailures = (halted: readonly Halt[], delivered: MskEvent): PartialBatchResponse =>
  partialBatchResponse(
    Object.values(delivered.records),
    new Map(halted.map((halt) => [topicPartition(halt.position), halt.position.offset])),
  );

/** The error that says where a gap halts its partition. */
export const gapError = (gap: GapFound): EventGapError =>
  new EventGapError(gap.consumer, gap.item, gap.aggregateType, gap.aggregateId, gap.appliedVersion, gap.eventVersion, gap.position);

/** The error that says where and why a partition halts: EventGapError for a gap, EventChainError for a record this code cannot read. */
export const haltError = (halt: Halt): EventGapError | EventChainError =>
  halt.cause === 'gap' ? gapError(halt.gap) : new EventChainError(halt.fault);
