/**
 * The partial batch response of both triggered handlers: the one place where "this partition
 * goes on from offset N" becomes `batchItemFailures`. Pure.
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
 * The partial batch response for a batch whose partitions go on from the given offsets (by
 * `topic-partition`; a partition not named completed): every delivered record at or after its
 * partition's offset, in partition and offset order.
 */
export const partialBatchResponse = (
  delivered: Iterable<readonly Delivered[]>,
  retryFrom: ReadonlyMap<string, number>,
): PartialBatchResponse => {
  const batchItemFailures: BatchItemFailure[] = [];
  for (const records of delivered)
    for (const record of records) {
      const partition = topicPartition(record);
      const from = retryFrom.get(partition);
      if (from !== undefined && Number(record.offset) >= from)
        batchItemFailures.push({ itemIdentifier: { partition, offset: Number(record.offset) } });
    }
  batchItemFailures.sort(
    (a, b) => a.itemIdentifier.partition.localeCompare(b.itemIdentifier.partition) || a.itemIdentifier.offset - b.itemIdentifier.offset,
  );
  return { batchItemFailures };
};
