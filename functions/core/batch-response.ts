/**
 * The partial batch response of both triggered handlers: the one place where "this partition
 * stops at offset N" becomes `batchItemFailures`. Pure. An error whose disposition is
 * `retry-batch` (core/errors.ts) never gets here: the handler throws it and the trigger
 * retries the whole batch.
 *
 * AWS documents partial batch responses for Kafka triggers only as letting Lambda "retry only
 * the failed records"; the rule that the lowest failed item becomes the checkpoint, and every
 * record after it is retried, is documented for Kinesis and DynamoDB Streams, not for Kafka.
 * A response that named only the first record of a halted partition would therefore be safe
 * under the first reading alone: read the second way, the records after it, which the handler
 * deliberately left alone, would be committed — skipped. So the response lists every record of
 * the partition from the first one to retry to the end of the batch: under either reading the
 * trigger then retries exactly the records the handler did not handle, and commits only what
 * precedes them.
 */
import { topicPartition } from './wire.ts';

/** One record the trigger must deliver again, as the partial batch response names it. */
export interface BatchItemFailure {
  readonly itemIdentifier: { readonly partition: string; readonly offset: number };
}

/** The response a triggered handler returns: nothing to retry, or the records to deliver again. */
export interface PartialBatchResponse {
  readonly batchItemFailures: BatchItemFailure[];
}

/** A record's coordinates, as the trigger delivered it. */
interface Delivered {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
}

/**
 * Where a partition stops within a batch: the first record the trigger must deliver again. On
 * the event side, where a `halt-partition` error (core/errors.ts) names it; on the command
 * side, the first command left for the next batch.
 */
export type Stop = Delivered;

/** Each stopped partition's first record to deliver again, by `topic-partition`: the lowest of its stops. */
export const retryFrom = (stops: Iterable<Stop>): Map<string, number> => {
  const from = new Map<string, number>();
  for (const stop of stops) {
    const tp = topicPartition(stop);
    from.set(tp, Math.min(from.get(tp) ?? Infinity, Number(stop.offset)));
  }
  return from;
};

/**
 * The partial batch response of a batch whose partitions stop at `stops` (a partition with no
 * stop completed): every delivered record at or after its partition's first stop, in
 * partition and offset order. Both triggered handlers answer with it.
 */
export const partialBatchResponse = (delivered: Iterable<readonly Delivered[]>, stops: Iterable<Stop>): PartialBatchResponse => {
  const from = retryFrom(stops);
  const batchItemFailures: BatchItemFailure[] = [];
  for (const records of delivered)
    for (const record of records) {
      const partition = topicPartition(record);
      const first = from.get(partition);
      if (first !== undefined && Number(record.offset) >= first)
        batchItemFailures.push({ itemIdentifier: { partition, offset: Number(record.offset) } });
    }
  batchItemFailures.sort(
    (a, b) => a.itemIdentifier.partition.localeCompare(b.itemIdentifier.partition) || a.itemIdentifier.offset - b.itemIdentifier.offset,
  );
  return { batchItemFailures };
};
