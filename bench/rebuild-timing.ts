/**
 * The rebuild benchmark's instruments: a heads table that times its checkpoints' writes, and
 * an event reader that times what the rebuild does inside its callback.
 */
import { performance } from 'node:perf_hooks';
import { AggregatesTable } from '../functions/adapters/dynamodb/aggregates-table.ts';
import type { LogRecord, PartitionOffsets, TopicLog } from '../functions/adapters/kafka/topic-log.ts';
import type { ControlRecord } from '../functions/control/control.ts';
import type { Head } from '../functions/heads/head.ts';
import type { PageWrite } from '../functions/heads/archive-pages.ts';

/** Wall time while at least one call is in flight: overlapping calls are counted once. */
class Busy {
  ms = 0;
  private inFlight = 0;
  private since = 0;

  async time<T>(call: () => Promise<T>): Promise<T> {
    if (this.inFlight++ === 0) this.since = performance.now();
    try {
      return await call();
    } finally {
      if (--this.inFlight === 0) this.ms += performance.now() - this.since;
    }
  }
}

/** Heads table that times its checkpoint writes: from the first head write to the control put that ends the checkpoint. */
export class TimedHeadsTable extends AggregatesTable {
  puts = 0;
  private readonly putting = new Busy();
  private readonly paging = new Busy();
  /** Wall time while heads were being written (groups overlap). */
  get putMs(): number {
    return this.putting.ms;
  }
  /** Wall time while archive pages were being written. */
  get pagesMs(): number {
    return this.paging.ms;
  }
  checkpoints: { heads: number; ms: number }[] = [];
  private openedAt: number | undefined;
  private headsInCheckpoint = 0;

  override async putRebuiltAll(
    heads: readonly Head[],
    epoch: number,
    concurrency: number,
  ): Promise<{ written: number; fencedOff: number }> {
    this.openedAt ??= performance.now();
    this.headsInCheckpoint += heads.length;
    try {
      return await this.putting.time(() => super.putRebuiltAll(heads, epoch, concurrency));
    } finally {
      this.puts += heads.length;
    }
  }

  /** Archive pages written. */
  pages = 0;

  override async putPages(pages: readonly PageWrite[], windowMs: number): Promise<void> {
    try {
      await this.paging.time(() => super.putPages(pages, windowMs));
    } finally {
      this.pages += pages.length;
    }
  }

  override async putControl(next: ControlRecord, expected: ControlRecord | undefined): Promise<boolean> {
    const t0 = performance.now();
    const done = await super.putControl(next, expected);
    if (next.status === 'rebuilding' && next.progress !== null && expected?.status === 'rebuilding' && expected.progress !== null) {
      this.checkpoints.push({ heads: this.headsInCheckpoint, ms: performance.now() - (this.openedAt ?? t0) });
      this.openedAt = undefined;
      this.headsInCheckpoint = 0;
    }
    return done;
  }
}

/** The rebuild's reader, timing the time spent inside its callback (fold and checkpoints). */
export const timedEventLog = (inner: TopicLog) => {
  const timing = { readMs: 0, callbackMs: 0, chunks: 0, startedAt: 0 };
  return {
    timing,
    topic: inner.topic,
    offsets: () => inner.offsets(),
    read: async (from: PartitionOffsets, to: PartitionOffsets, onChunk: (records: LogRecord[]) => Promise<'continue' | 'stop'>) => {
      timing.startedAt = performance.now();
      try {
        await inner.read(from, to, async (records) => {
          const t0 = performance.now();
          timing.chunks++;
          try {
            return await onChunk(records);
          } finally {
            timing.callbackMs += performance.now() - t0;
          }
        });
      } finally {
        timing.readMs += performance.now() - timing.startedAt;
      }
    },
  };
};
