/**
 * One emulated MSK event source mapping: a kafkajs consumer in the mapping's group feeds a
 * buffer; batches go to the handler when full or when the batching window ends; offsets are
 * committed only after success. A failed batch is retried with exponential backoff for as
 * long as it fails: its partitions are blocked, never skipped (no retry limit, no on-failure
 * destination), and say so. A partition is in at most one invocation at a time.
 */
import type { Admin, Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import { createConsumer, startConsumer } from './consumer.ts';
import { PartitionBuffer, type Batch } from './batcher.ts';
import { checkCommitted, commitBatch, sameLife, type CommitContext } from './committed.ts';
import { describeFailure, HELD_RETRY_MS, heldByRebuild, invokeHandler, message, type Called } from './invoke.ts';
import type { FunctionModule } from './lambda.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import type { TriggerMapping } from './mappings.ts';
import { toMskRecord, type EventSource } from './msk-payload.ts';
import { backoffMs, failedItems, recordCount, splitBatch, type Backoff, type PartialResponseReading } from './outcome.ts';
import { oldestRecordAges } from '../../functions/core/trigger-event.ts';
import { BlockedPartitions, offsetsOf, type BlockedPartition, type InvocationReport, type RecordAge } from './reports.ts';

export type { BlockedPartition, InvocationReport, RecordAge } from './reports.ts';

/** What a poller needs from the runtime around it. */
export interface PollerDeps {
  readonly kafka: Kafka;
  readonly fn: FunctionModule;
  readonly source: EventSource;
  readonly region: string;
  readonly backoff: Backoff;
  /** How a partial batch response is read (outcome.ts). @default 'checkpoint' */
  readonly partialResponse?: PartialResponseReading;
  readonly report: (report: InvocationReport) => void;
  /** Called whenever a partition becomes blocked or goes on again. */
  readonly onBlockedChange?: () => void;
  /** Called when an invocation starts, once its {@link Poller.recordAges} are set. */
  readonly onInvoke?: () => void;
  readonly log: (line: string) => void;
  readonly paused: boolean;
  /** The consumer's session timeout: how long a member that died unannounced holds its partitions. @default kafkajs's 30 s */
  readonly sessionTimeoutMs?: number;
}

/** Runs one mapping. */
export class Poller {
  private readonly buffer = new PartitionBuffer();
  private consumer: Consumer | undefined;
  /** Reads the group's committed offsets before invocations (checkCommitted). */
  private admin: Admin | undefined;
  private paused: boolean;
  private stopping = false;
  /** Partitions the group gave this member, once it has joined. */
  private assigned: ReadonlySet<string> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sequence = 0;
  /** Handler calls in progress. */
  private invoking = 0;
  private readonly batches = new Set<Promise<void>>();
  private readonly idleWaiters = new Set<() => void>();
  private readonly resumeWaiters = new Set<() => void>();
  private readonly sleepers = new Set<() => void>();
  /** Partitions waiting on a failing batch. */
  private readonly blockedPartitions: BlockedPartitions;
  /** Records waiting in one partition above which its fetching pauses, until its batches have taken them. */
  private readonly highWater: number;
  /** Partitions whose fetching is paused because enough of their records wait here. */
  private readonly full = new Set<string>();
  /** The age of the oldest record of each partition's last batch, by `topic-partition`. */
  private readonly ages = new Map<string, RecordAge>();

  constructor(
    readonly mapping: TriggerMapping,
    private readonly deps: PollerDeps,
  ) {
    this.paused = deps.paused;
    this.blockedPartitions = new BlockedPartitions(mapping.functionName, deps.onBlockedChange);
    this.highWater = Math.max(2 * mapping.batchSize, 1000);
  }

  /** Joins the group (starting at the earliest offset when it has no committed ones) and starts consuming. */
  async start(): Promise<void> {
    this.consumer = createConsumer(this.deps.kafka, this.mapping, this.deps, (assigned) => {
      this.assigned = assigned;
      // The consumer reads again from the committed offsets: what waited would come twice.
      this.buffer.clear();
      this.fetchAgain();
    });
    await startConsumer(this.consumer, this.mapping, (payload) => this.onBatch(payload));
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** The partitions that wait on a failing batch. */
  get blocked(): readonly BlockedPartition[] {
    return this.blockedPartitions.list();
  }

  /** Lag in time per partition: the age of the oldest record of its last invoked batch. */
  get recordAges(): readonly RecordAge[] {
    return [...this.ages.values()];
  }

  /** Starts no new invocation; resolves once the running ones have ended. */
  async pause(): Promise<void> {
    this.paused = true;
    clearTimeout(this.timer);
    if (this.invoking > 0) await new Promise<void>((resolve) => this.idleWaiters.add(resolve));
  }

  /** Invokes again, from where it was. */
  resume(): void {
    this.paused = false;
    this.notify(this.resumeWaiters);
    this.pump();
  }

  /** Lets running invocations end (committing what succeeds), then leaves the group. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    for (const waiters of [this.resumeWaiters, this.sleepers]) this.notify(waiters);
    await Promise.allSettled([...this.batches]);
    await this.consumer?.disconnect();
    await this.admin?.disconnect();
  }

  private notify(waiters: Set<() => void>): void {
    for (const wake of [...waiters]) wake();
    waiters.clear();
  }

  private onBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    if (!payload.isRunning() || payload.isStale() || this.stopping) return Promise.resolve();
    const now = Date.now();
    const tp = `${batch.topic}-${batch.partition}`;
    const first = batch.messages[0]?.offset;
    if (first !== undefined && this.buffer.wentBack(tp, Number(first))) {
      this.buffer.restart(tp);
      this.deps.log(
        `${this.mapping.functionName}: ${tp} starts again at offset ${first}: its topic was recreated. What was fetched of the old topic is dropped, ` +
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
    this.pump();
    return Promise.resolve();
  }

  /** Fetches again for the partitions that paused while full, once their batches have taken enough. */
  private fetchAgain(): void {
    for (const tp of this.full) {
      if (this.buffer.queued(tp) >= this.highWater) continue;
      this.full.delete(tp);
      const cut = tp.lastIndexOf('-');
      this.consumer?.resume([{ topic: tp.slice(0, cut), partitions: [Number(tp.slice(cut + 1))] }]);
    }
  }

  /** Starts every batch that is due, and wakes up when the next window ends. */
  private pump(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.paused || this.stopping) return;
    const now = Date.now();
    const windowMs = this.mapping.maxBatchingWindowSeconds * 1000;
    while (this.buffer.ready(now, this.mapping.batchSize, windowMs)) {
      const running = this.runBatch(this.buffer.take(this.mapping.batchSize));
      this.batches.add(running);
      void running.finally(() => this.batches.delete(running));
    }
    this.fetchAgain();
    const wait = this.buffer.wakeIn(now, windowMs);
    if (wait !== undefined) this.timer = setTimeout(() => this.pump(), wait);
  }

  private async runBatch(initial: Batch): Promise<void> {
    const id = ++this.sequence;
    const lives = new Map([...initial.keys()].map((tp) => [tp, this.buffer.life(tp)]));
    let batch = initial;
    let attempt = 0;
    let blockedSince: number | undefined;
    try {
      while (batch.size > 0) {
        while (this.paused && !this.stopping) await new Promise<void>((resolve) => this.resumeWaiters.add(resolve));
        if (this.stopping) return;
        await checkCommitted(this.commitContext(), batch);
        // Paused meanwhile: wait again (and check again after), so that a resolved pause means no invocation starts.
        if (this.paused || this.stopping) continue;
        batch = sameLife(this.commitContext(), this.ownedOnly(batch), lives);
        if (batch.size === 0) return;
        attempt++;
        const started = Date.now();
        const called = await this.invoke(batch);
        const durationMs = Date.now() - started;
        const base = {
          functionName: this.mapping.functionName,
          batch: id,
          attempt,
          offsets: offsetsOf(batch),
          records: recordCount(batch),
          durationMs,
          ...(blockedSince === undefined ? {} : { blockedSince }),
        };
        const failed = called.ok ? failedItems(called.value, batch) : 'all';
        if (failed !== 'all' && failed.size === 0) {
          await this.commit(batch, lives);
          this.blockedPartitions.unblock(batch.keys());
          this.deps.report({ ...base, outcome: 'ok' });
          return;
        }
        if (!called.ok && heldByRebuild(called.error)) {
          // On AWS a rebuild disables this trigger, so such batches never come. Locally the
          // rebuild may run in another process (the CLI), so the emulation holds the batch instead.
          attempt--;
          this.deps.report({ ...base, outcome: 'failed', error: message(called.error), retryInMs: HELD_RETRY_MS });
          await this.sleep(HELD_RETRY_MS);
          continue;
        }
        const { done, retry } = failed === 'all' ? { done: new Map(), retry: batch } : splitBatch(batch, failed, this.deps.partialResponse);
        await this.commit(done, lives);
        this.blockedPartitions.unblock(done.keys(), retry);
        batch = this.buffer.topUp(retry, this.mapping.batchSize);
        const { error, errorOf } = describeFailure(called, failed, retry);
        // Block, never skip: the batch goes again until it succeeds, however long that takes.
        blockedSince ??= started;
        this.blockedPartitions.block(batch, blockedSince, attempt, errorOf);
        const retryInMs = backoffMs(attempt, this.deps.backoff);
        this.deps.report({ ...base, outcome: called.ok && failed !== 'all' ? 'partial' : 'failed', error, retryInMs, blockedSince });
        await this.sleep(retryInMs);
      }
    } catch (error) {
      // Not the handler's failure (that is handled above) but the trigger's own: go again.
      this.deps.log(`${this.mapping.functionName}: batch ${id} ${message(error)}; its records go again`);
      this.buffer.putBack(sameLife(this.commitContext(), batch, lives), Date.now());
    } finally {
      this.blockedPartitions.unblock(initial.keys());
      for (const tp of initial.keys()) this.buffer.release(tp);
      this.pump();
    }
  }

  /** The partitions of the batch that this member still owns; a revoked one belongs to its new owner. */
  private ownedOnly(batch: Batch): Batch {
    const assigned = this.assigned;
    if (assigned === undefined || [...batch.keys()].every((tp) => assigned.has(tp))) return batch;
    const revoked = [...batch.keys()].filter((tp) => !assigned.has(tp));
    this.deps.log(`${this.mapping.functionName}: ${revoked.join(', ')} revoked; left to the new owner`);
    return new Map([...batch].filter(([tp]) => assigned.has(tp)));
  }

  /** What the committed-offset checks and commits reach of this poller. */
  private commitContext(): CommitContext {
    return {
      mapping: this.mapping,
      buffer: this.buffer,
      consumer: this.consumer,
      admin: () => this.connectedAdmin(),
      log: this.deps.log,
    };
  }

  private async connectedAdmin(): Promise<Admin> {
    if (this.admin === undefined) {
      const admin = this.deps.kafka.admin();
      await admin.connect();
      this.admin = admin;
    }
    return this.admin;
  }

  /** Calls the handler (invoke.ts), counting the calls in progress so that a pause can wait for them. */
  private async invoke(batch: Batch): Promise<Called> {
    this.invoking++;
    try {
      const { fn, source, region, log } = this.deps;
      return await invokeHandler(
        { fn, mapping: this.mapping, source, region, log, started: (event, at) => this.started(event, at) },
        batch,
      );
    } finally {
      if (--this.invoking === 0) this.notify(this.idleWaiters);
    }
  }

  /** Keeps each partition's record age, with the same function as the handlers' metric on AWS, so that both show the same lag. */
  private started(event: MskEvent, at: number): void {
    for (const [partition, ageMs] of oldestRecordAges(event, at))
      this.ages.set(partition, { functionName: this.mapping.functionName, partition, ageMs, at });
    this.deps.onInvoke?.();
  }

  /** Commits the batch (committed.ts), except partitions whose log started again since it was taken: the old offset would skip the new topic's records. */
  private commit(batch: Batch, lives: ReadonlyMap<string, number>): Promise<void> {
    return commitBatch(this.commitContext(), sameLife(this.commitContext(), batch, lives));
  }

  /** Waits, waking early when the poller stops. */
  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.sleepers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }
}
