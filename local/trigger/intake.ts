/**
 * What a poller's consumer fetches goes into its buffer: control records dropped, a recreated
 * topic's partition started again, and a partition with enough records waiting paused until
 * its batches have taken them.
 */
import type { Consumer, EachBatchPayload } from 'kafkajs';
import type { PartitionBuffer } from './batcher.ts';
import { toMskRecord } from './msk-payload.ts';

/** Fills one poller's buffer from its consumer's fetches. */
export class Intake {
  /** Partitions whose fetching is paused because enough of their records wait here. */
  private readonly full = new Set<string>();

  constructor(
    private readonly functionName: string,
    private readonly buffer: PartitionBuffer,
    /** Records waiting in one partition above which its fetching pauses, until its batches have taken them. */
    private readonly highWater: number,
    private readonly log: (line: string) => void,
  ) {}

  /** Buffers a fetched batch; the fetch position moves, the committed offsets do not. */
  add(payload: EachBatchPayload): void {
    const { batch } = payload;
    const now = Date.now();
    const tp = `${batch.topic}-${batch.partition}`;
    const first = batch.messages[0];
    if (first !== undefined && this.buffer.wentBack(toMskRecord(batch.topic, batch.partition, first))) {
      this.buffer.restart(tp);
      this.log(
        `${this.functionName}: ${tp} starts again at offset ${first.offset}: its topic was recreated. What was fetched of the old topic is dropped, ` +
          'and a batch of it still running is not committed (its offsets would skip records of the new one)',
      );
    }
    for (const m of batch.messages)
      if (!('isControlRecord' in m && m.isControlRecord)) this.buffer.add(toMskRecord(batch.topic, batch.partition, m), now);
    // Moves the fetch position only; offsets are committed after the handler succeeds.
    payload.resolveOffset(batch.lastOffset());
    // A partition with enough waiting stops fetching, and only it: kafkajs's fetch loop waits
    // for every eachBatch of a fetch, so waiting here would starve the other partitions.
    if (this.buffer.queued(tp) >= this.highWater && !this.full.has(tp)) {
      this.full.add(tp);
      payload.pause();
    }
  }

  /** Fetches again for the partitions that paused while full, once their batches have taken enough. */
  fetchAgain(consumer: Consumer | undefined): void {
    for (const tp of this.full) {
      if (this.buffer.queued(tp) >= this.highWater) continue;
      this.full.delete(tp);
      const cut = tp.lastIndexOf('-');
      consumer?.resume([{ topic: tp.slice(0, cut), partitions: [Number(tp.slice(cut + 1))] }]);
    }
  }
}
