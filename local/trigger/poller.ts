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
import type { Containers } from './containers.ts';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import type { TriggerMapping } from './mappings.ts';
import type { EventSource } from './msk-payload.ts';
import { Intake } from './intake.ts';
import { Waiters } from './waiters.ts';
import { backoffMs, failedItems, recordCount, splitBatch, type Backoff, type PartialResponseReading } from './outcome.ts';
import { oldestRecordAges } from '../../functions/core/trigger-event.ts';
import { BlockedPartitions, offsetsOf, type BlockedPartition, type InvocationReport, type RecordAge } from './reports.ts';

export type { BlockedPartition, InvocationReport, RecordAge } from './reports.ts';

/** What a poller needs from the runtime around it. */
export interface PollerDeps {
  readonly kafka: Kafka;
  /** The function's containers, which this poller's invocations share with its other mappings'. */
  readonly containers: Containers;
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
  private admin: Promise<Admin> | undefined;
  private paused: boolean;
  private stopping = false;
  /** Partitions the group gave this member, once it has joined. */
  private assigned: ReadonlySet<string> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private sequence = 0;
  /** Handler calls in progress. */
  private invoking = 0;
  private readonly batches = new Set<Promise<void>>();
  private readonly idleWaiters = new Waiters();
  private readonly resumeWaiters = new Waiters();
  private readonly sleepers = new Waiters();
  /** Partitions waiting on a failing batch. */
  private readonly blockedPartitions: BlockedPartitions;
  private readonly intake: Intake;
  /** The age of the oldest record of each partition's last batch, by `topic-partition`. */
  private readonly ages = new Map<string, RecordAge>();

  constructor(
    readonly mapping: TriggerMapping,
    private readonly deps: PollerDeps,
  ) {
    this.paused = deps.paused;
    this.blockedPartitions = new BlockedPartitions(mapping.functionName, deps.onBlockedChange);
    this.intake = new Intake(mapping.functionName, this.buffer, Math.max(2 * mapping.batchSize, 1000), deps.log);
  }

  /** Joins the group (starting at the earliest offset when it has no committed ones) and starts consuming. */
  async start(): Promise<void> {
    this.consumer = createConsumer(this.deps.kafka, this.mapping, this.deps, (assigned) => {
      this.assigned = assigned;
      // The consumer reads again from the committed offsets: what waited would come twice.
      this.buffer.clear();
      this.intake.fetchAgain(this.consumer);
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
    if (this.invoking > 0) await this.idleWaiters.wait();
  }

  /** Invokes again, from where it was. */
  resume(): void {
    this.paused = false;
    this.resumeWaiters.wakeAll();
    this.pump();
  }

  /** Lets running invocations end (committing what succeeds), then leaves the group. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    this.resumeWaiters.wakeAll();
    this.sleepers.wakeAll();
    await Promise.allSettled([...this.batches]);
    await this.consumer?.disconnect();
    await (await this.admin?.catch(() => undefined))?.disconnect();
  }

  private onBatch(payload: EachBatchPayload): Promise<void> {
    if (!payload.isRunning() || payload.isStale() || this.stopping) return Promise.resolve();
    this.intake.add(payload);
    this.pump();
    return Promise.resolve();
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
    this.intake.fetchAgain(this.consumer);
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
        while (this.paused && !this.stopping) await this.resumeWaiters.wait();
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
          await this.sleepers.sleep(HELD_RETRY_MS);
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
        await this.sleepers.sleep(retryInMs);
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

  /** One admin client however many batches ask at once (each would otherwise connect one, and only the last be disconnected). */
  private connectedAdmin(): Promise<Admin> {
    this.admin ??= (async () => {
      const admin = this.deps.kafka.admin();
      await admin.connect();
      return admin;
    })().catch((error: unknown) => {
      this.admin = undefined;
      throw error;
    });
    return this.admin;
  }

  /**
   * Calls the handler (invoke.ts) in a container of its function's, counting the calls in
   * progress so that a pause can wait for them. A container that cannot start fails the call.
   */
  private async invoke(batch: Batch): Promise<Called> {
    this.invoking++;
    try {
      const { containers, source, region, log } = this.deps;
      const mapping = this.mapping;
      const started = (event: MskEvent, at: number) => this.started(event, at);
      return await containers
        .run((fn) => invokeHandler({ fn, mapping, source, region, log, started }, batch))
        .catch((error: unknown): Called => ({ ok: false, error }));
    } finally {
      if (--this.invoking === 0) this.idleWaiters.wakeAll();
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
    return commitBatch(this.commitContext(), sameLife(this.commitContext(), batch, lives), lives);
  }
}
