/**
 * One emulated MSK event source mapping: a kafkajs consumer in the mapping's group feeds a
 * buffer; batches go to the handler when full or when the batching window ends; offsets are
 * committed only after success. A failed batch is retried with exponential backoff for as
 * long as it fails: its partitions are blocked, never skipped (no retry limit, no on-failure
 * destination), and say so. A partition is in at most one invocation at a time.
 */
import type { Admin, Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import { AsyncLocalStorage } from 'node:async_hooks';
import { subscribe } from 'node:diagnostics_channel';
import { oldestRecordAges } from '../../functions/core/trigger-event.ts';
import { HALT_CHANNEL, type HaltNotice } from '../../functions/handlers/halt-channel.ts';
import { PartitionBuffer, type Batch } from './batcher.ts';
import { BatchItemFailuresError, InvocationTimeoutError } from './errors.ts';
import { lambdaContext, type FunctionModule } from './lambda.ts';
import type { TriggerMapping } from './mappings.ts';
import { mskEvent, toMskRecord, type EventSource } from './msk-payload.ts';
import { backoffMs, failedItems, firstFailed, recordCount, splitBatch, type Backoff, type PartialResponseReading } from './outcome.ts';

/** Wait between attempts while a snapshot rebuild holds the commands. */
const HELD_RETRY_MS = 1_000;

/** The command handler refused because a snapshot rebuild holds the lock: wait, do not count it as a retry. */
const heldByRebuild = (error: unknown): boolean => error instanceof Error && error.name === 'RebuildInProgressError';

/** What happened to a batch, reported once per invocation and once per dead-lettering. */
export interface InvocationReport {
  readonly functionName: string;
  /** Sequence number of the batch within this mapping; retries keep it. */
  readonly batch: number;
  /** 1 for the first invocation of the batch. */
  readonly attempt: number;
  /**
   * `ok`: committed. `partial`: the handler reported failed records (the others committed).
   * `failed`: it threw or timed out. After `partial` or `failed` the batch's remaining
   * partitions are blocked until an attempt succeeds.
   */
  readonly outcome: 'ok' | 'partial' | 'failed';
  /** Offsets of the records, by `topic-partition`. */
  readonly offsets: Readonly<Record<string, readonly number[]>>;
  readonly records: number;
  readonly durationMs: number;
  readonly error?: string;
  /** Wait before the next attempt, when there is one. */
  readonly retryInMs?: number;
  /** When the batch's first failure happened (ms), while it is blocked or the attempt that ended it. */
  readonly blockedSince?: number;
}

/** A partition that waits on a failing batch: it goes on only when an attempt succeeds. */
export interface BlockedPartition {
  readonly functionName: string;
  /** `topic-partition`. */
  readonly partition: string;
  /** The first offset not yet handled: where the partition stands. */
  readonly offset: number;
  /** When the first attempt of the batch failed (ms since the epoch). */
  readonly since: number;
  /** Failed attempts so far. */
  readonly attempts: number;
  /** The last attempt's error. */
  readonly error: string;
}

/** Lag in time, as the handlers publish it on AWS (`oldestRecordAgeMs`): the age of the oldest record of a partition's last batch. */
export interface RecordAge {
  readonly functionName: string;
  /** `topic-partition`. */
  readonly partition: string;
  /** The record's timestamp to the invocation's start, in ms. */
  readonly ageMs: number;
  /** When that invocation started (ms since the epoch). */
  readonly at: number;
}

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

/** Why a partition was reported failed, by `topic-partition`, as the handler published it (functions/handlers/halt-channel.ts). */
type Reasons = ReadonlyMap<string, string>;

type Called = { readonly ok: true; readonly value: unknown; readonly reasons: Reasons } | { readonly ok: false; readonly error: unknown };

/** The halts of the invocation whose async context publishes them: each invocation runs in its own store. */
const invocationHalts = new AsyncLocalStorage<Map<string, string>>();
subscribe(HALT_CHANNEL, (message) => {
  const { position, reason } = message as HaltNotice;
  invocationHalts.getStore()?.set(`${position.topic}-${position.partition}`, reason);
});

const message = (error: unknown): string => (error instanceof Error ? `${error.name}: ${error.message}` : String(error));

const offsetsOf = (batch: Batch): Record<string, number[]> =>
  Object.fromEntries([...batch].map(([tp, records]) => [tp, records.map((r) => r.offset)]));

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
  /** Partitions waiting on a failing batch, by `topic-partition`. */
  private readonly blockedPartitions = new Map<string, BlockedPartition>();
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
    this.highWater = Math.max(2 * mapping.batchSize, 1000);
  }

  /** Joins the group (starting at the earliest offset when it has no committed ones) and starts consuming. */
  async start(): Promise<void> {
    const consumer = this.deps.kafka.consumer({
      groupId: this.mapping.consumerGroupId,
      maxWaitTimeInMs: 250,
      allowAutoTopicCreation: false,
      ...(this.deps.sessionTimeoutMs === undefined ? {} : { sessionTimeout: this.deps.sessionTimeoutMs }),
    });
    this.consumer = consumer;
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      this.assigned = new Set(Object.entries(payload.memberAssignment).flatMap(([topic, ps]) => ps.map((p) => `${topic}-${p}`)));
      // The consumer reads again from the committed offsets: what waited would come twice.
      this.buffer.clear();
      this.fetchAgain();
    });
    consumer.on(consumer.events.CRASH, ({ payload }) =>
      this.deps.log(`${this.mapping.functionName}: consumer crashed (${message(payload.error)})${payload.restart ? ', restarting' : ''}`),
    );
    await consumer.connect();
    await consumer.subscribe({ topics: [this.mapping.topic], fromBeginning: true });
    await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: (payload) => this.onBatch(payload) });
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /** The partitions that wait on a failing batch. */
  get blocked(): readonly BlockedPartition[] {
    return [...this.blockedPartitions.values()];
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
        await this.checkCommitted(batch);
        // Paused meanwhile: wait again (and check again after), so that a resolved pause means no invocation starts.
        if (this.paused || this.stopping) continue;
        batch = this.sameLife(this.ownedOnly(batch), lives);
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
          this.unblock(batch.keys());
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
        this.unblock(done.keys(), retry);
        batch = this.buffer.topUp(retry, this.mapping.batchSize);
        const reasons: Reasons = called.ok ? called.reasons : new Map();
        const error = called.ok
          ? failed === 'all'
            ? 'BatchItemFailuresError: batchItemFailures names a record the batch does not hold'
            : message(new BatchItemFailuresError(`${recordCount(retry)} record(s) reported failed`)) +
              [...retry.keys()].map((tp) => (reasons.has(tp) ? `; ${reasons.get(tp)}` : '')).join('')
          : message(called.error);
        // Block, never skip: the batch goes again until it succeeds, however long that takes.
        blockedSince ??= started;
        this.block(batch, blockedSince, attempt, (tp) => {
          const reason = failed === 'all' ? undefined : reasons.get(tp);
          const from = failed === 'all' ? undefined : firstFailed(failed).get(tp);
          return reason === undefined || from === undefined
            ? error
            : `BatchItemFailuresError: reported failed from offset ${from}: ${reason}`;
        });
        const retryInMs = backoffMs(attempt, this.deps.backoff);
        this.deps.report({ ...base, outcome: called.ok && failed !== 'all' ? 'partial' : 'failed', error, retryInMs, blockedSince });
        await this.sleep(retryInMs);
      }
    } catch (error) {
      // Not the handler's failure (that is handled above) but the trigger's own: go again.
      this.deps.log(`${this.mapping.functionName}: batch ${id} ${message(error)}; its records go again`);
      this.buffer.putBack(this.sameLife(batch, lives), Date.now());
    } finally {
      this.unblock(initial.keys());
      for (const tp of initial.keys()) this.buffer.release(tp);
      this.pump();
    }
  }

  /** Marks the batch's partitions blocked at their first record, each with its error. */
  private block(batch: Batch, since: number, attempts: number, errorOf: (tp: string) => string): void {
    for (const [tp, records] of batch) {
      const offset = records[0]?.offset;
      if (offset !== undefined)
        this.blockedPartitions.set(tp, {
          functionName: this.mapping.functionName,
          partition: tp,
          offset,
          since,
          attempts,
          error: errorOf(tp),
        });
    }
    this.deps.onBlockedChange?.();
  }

  /** The partitions go on (except those still in `still`). */
  private unblock(partitions: Iterable<string>, still: Batch = new Map()): void {
    let changed = false;
    for (const tp of partitions) if (!still.has(tp)) changed = this.blockedPartitions.delete(tp) || changed;
    if (changed) this.deps.onBlockedChange?.();
  }

  /** The partitions of the batch that this member still owns; a revoked one belongs to its new owner. */
  private ownedOnly(batch: Batch): Batch {
    const assigned = this.assigned;
    if (assigned === undefined || [...batch.keys()].every((tp) => assigned.has(tp))) return batch;
    const revoked = [...batch.keys()].filter((tp) => !assigned.has(tp));
    this.deps.log(`${this.mapping.functionName}: ${revoked.join(', ')} revoked; left to the new owner`);
    return new Map([...batch].filter(([tp]) => assigned.has(tp)));
  }

  /**
   * Before an invocation: the group's committed offset of each partition must be where this
   * poller's commits left it. A topic deleted and recreated loses the group's offsets, and a
   * consumer that did not notice (kafkajs sends no topic ids: a new topic that already reached
   * its fetch position looks like the old one going on) would hand over records from the
   * middle of the new topic. Such a partition starts again where the group stands (its log
   * start when it has no offset); so does one whose last commit failed, which only delivers
   * records again.
   */
  private async checkCommitted(batch: Batch): Promise<void> {
    const floors = [...batch.keys()].flatMap((tp) => {
      const floor = this.buffer.floor(tp);
      return floor === undefined ? [] : [{ tp, floor }];
    });
    if (floors.length === 0 || this.consumer === undefined) return;
    const { topic } = this.mapping;
    let group: Awaited<ReturnType<Admin['fetchOffsets']>>[number] | undefined;
    let ends: Awaited<ReturnType<Admin['fetchTopicOffsets']>>;
    try {
      const admin = await this.connectedAdmin();
      [[group], ends] = await Promise.all([
        admin.fetchOffsets({ groupId: this.mapping.consumerGroupId, topics: [topic] }),
        admin.fetchTopicOffsets(topic),
      ]);
    } catch (error) {
      // The broker does not answer: neither will the invocation's own Kafka calls; its failure is retried as usual.
      this.deps.log(
        `${this.mapping.functionName}: could not read the group's committed offsets (${message(error)}); invoking without that check`,
      );
      return;
    }
    for (const { tp, floor } of floors) {
      const partition = Number(tp.slice(topic.length + 1));
      const committed = Number(group?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
      if (committed === floor) continue;
      const start = Number(ends.find((e) => e.partition === partition)?.low ?? 0);
      const from = committed >= 0 ? committed : start;
      this.buffer.restart(tp);
      this.consumer.seek({ topic, partition, offset: String(from) });
      this.deps.log(
        `${this.mapping.functionName}: ${tp} was committed up to ${floor} here, but the group ${committed >= 0 ? `has ${committed}` : 'has no offset'} ` +
          `(its topic was recreated, or a commit failed): it starts again at offset ${from}`,
      );
    }
  }

  private async connectedAdmin(): Promise<Admin> {
    if (this.admin === undefined) {
      const admin = this.deps.kafka.admin();
      await admin.connect();
      this.admin = admin;
    }
    return this.admin;
  }

  /** The partitions of the batch whose log has not started again since it was taken (the others' records are gone with their topic). */
  private sameLife(batch: Batch, lives: ReadonlyMap<string, number>): Batch {
    const stale = [...batch.keys()].filter((tp) => this.buffer.life(tp) !== lives.get(tp));
    if (stale.length === 0) return batch;
    this.deps.log(
      `${this.mapping.functionName}: ${stale.join(', ')} started again; the records taken before are dropped (what is in the log comes again)`,
    );
    return new Map([...batch].filter(([tp]) => !stale.includes(tp)));
  }

  /** Calls the handler with the batch's event; a handler still running at its timeout is waited for, so the partition stays single-flight. */
  private async invoke(batch: Batch): Promise<Called> {
    const event = mskEvent([...batch.values()].flat(), this.deps.source);
    const at = Date.now();
    // The same function as the handlers' metric on AWS, so that both show the same lag.
    for (const [partition, ageMs] of oldestRecordAges(event, at))
      this.ages.set(partition, { functionName: this.mapping.functionName, partition, ageMs, at });
    this.deps.onInvoke?.();
    const timeoutMs = this.mapping.timeoutSeconds * 1000;
    const context = lambdaContext(this.mapping, this.deps.region, Date.now() + timeoutMs);
    this.invoking++;
    let timer: NodeJS.Timeout | undefined;
    const reasons = new Map<string, string>();
    try {
      const call: Promise<Called> = Promise.resolve()
        .then(() => invocationHalts.run(reasons, () => this.deps.fn.handler(event, context)))
        .then(
          (value) => ({ ok: true, value, reasons }),
          (error: unknown) => ({ ok: false, error }),
        );
      const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
      const first = await Promise.race([call, timedOut]);
      if (first !== 'timeout') return first;
      const error = new InvocationTimeoutError(this.mapping.functionName, this.mapping.timeoutSeconds);
      this.deps.log(`${error.message}; waiting for the call to end before retrying (a process cannot be killed like a Lambda sandbox)`);
      await call;
      return { ok: false, error };
    } finally {
      clearTimeout(timer);
      if (--this.invoking === 0) this.notify(this.idleWaiters);
    }
  }

  /**
   * Commits the offset after each partition's last record; a failed commit (lost partition)
   * means a later redelivery. A partition whose log started again since the batch was taken is
   * left alone: the old offset, committed on the new topic, would skip its records.
   */
  private async commit(batch: Batch, lives: ReadonlyMap<string, number>): Promise<void> {
    const offsets = [...this.sameLife(batch, lives).values()].flatMap((records) => {
      const last = records.at(-1);
      return last === undefined ? [] : [{ topic: last.topic, partition: last.partition, offset: String(last.offset + 1) }];
    });
    if (offsets.length === 0) return;
    try {
      await this.consumer?.commitOffsets(offsets);
    } catch (error) {
      this.deps.log(
        `${this.mapping.functionName}: commit of ${offsets.map((o) => `${o.topic}-${o.partition}@${o.offset}`).join(' ')} failed (${message(error)}); the records will be delivered again`,
      );
    }
    for (const o of offsets) this.buffer.advance(`${o.topic}-${o.partition}`, Number(o.offset));
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
