/**
 * The simulator's MSK trigger, one per triggered topic: per partition, batches from the
 * consumer group's committed offset, one invocation per partition at a time, the offset
 * committed after success (up to the first failed record of a partial response), the batch
 * delivered again after a failure or a crash. Faults it can bring: a racing invocation of a
 * batch already in flight (a redelivery while the first still runs), and a commit that is
 * lost (the batch succeeded, and is delivered again).
 */
import type { MemoryCluster, StoredRecord } from '../functions/adapters/memory/cluster.ts';
import { mskRecordOf, type MskEvent, type MskRecord } from '../functions/core/trigger-event.ts';
import type { Random } from '../chaos/random.ts';
import type { CommandGate } from '../functions/rebuild/ports.ts';
import type { Scheduler, Task } from './scheduler.ts';

/** What an invocation returns that the trigger reads: the records to deliver again. */
export interface InvocationResult {
  readonly batchItemFailures?: readonly { readonly itemIdentifier: { readonly partition: string; readonly offset: number } }[];
  readonly halted?: readonly { readonly cause: string; readonly position: { readonly partition: number; readonly offset: number } }[];
}

/** One invocation in flight, of one partition or (as AWS may batch them) several. */
interface Invocation {
  readonly task: Task;
  readonly partitions: readonly number[];
  readonly life: number;
}

/** A stored record as the trigger's payload carries it. */
export const mskRecord = (topic: string, r: StoredRecord): MskRecord => ({
  ...mskRecordOf(topic, r),
  timestampType: 'CREATE_TIME',
  headers: [],
});

/** The trigger of one topic. */
export class SimTrigger {
  private readonly inFlight: Invocation[] = [];
  /** Failures in a row per partition, with the last error (for the operator and the report). */
  readonly failures = new Map<number, { count: number; last: unknown }>();
  /** Paused: no new batch is delivered (the rebuild holds the commands trigger). */
  paused = false;
  /** Invocations of the handler so far, and crashed ones. */
  invocations = 0;

  constructor(
    private readonly cluster: MemoryCluster,
    private readonly scheduler: Scheduler,
    readonly topic: string,
    readonly group: string,
    /** The handler as deployed now (the simulator swaps code versions and warm containers). */
    private readonly handler: () => (event: MskEvent) => Promise<InvocationResult>,
    private readonly maxBatch: number,
  ) {}

  /** Next offset the group will deliver per partition. */
  position(partition: number): number {
    return Math.max(this.cluster.start(this.topic)[partition] ?? 0, this.cluster.committed(this.group, this.topic, partition) ?? 0);
  }

  /** Partitions with records to deliver and no invocation in flight. */
  deliverable(): number[] {
    const end = this.cluster.end(this.topic);
    return Object.keys(end)
      .map(Number)
      .filter((p) => this.position(p) < (end[p] ?? 0) && !this.inFlight.some((i) => i.partitions.includes(p)));
  }

  /** Partitions with an invocation in flight. */
  busy(): number[] {
    return [...new Set(this.inFlight.flatMap((i) => i.partitions))];
  }

  /** True when every partition is delivered to its end and nothing is in flight. */
  caughtUp(): boolean {
    const end = this.cluster.end(this.topic);
    return this.inFlight.length === 0 && Object.keys(end).every((p) => this.position(Number(p)) >= (end[p] ?? 0));
  }

  /** The invocations in flight. */
  tasks(): Task[] {
    return this.inFlight.map((i) => i.task);
  }

  /**
   * Delivers a batch of `partition` (a free one picked by `random` when undefined): `race`
   * delivers one already in flight again; `loseCommit`: its success is not committed;
   * `partitions`: up to that many free partitions in one invocation, each its own batch.
   */
  deliver(random: Random, options: { partition?: number; race?: boolean; loseCommit?: boolean; partitions?: number } = {}): boolean {
    if (this.paused) return false;
    const candidates = options.race === true ? this.busy() : this.deliverable();
    const partition = options.partition ?? candidates[random.int(0, candidates.length - 1)];
    if (partition === undefined || !candidates.includes(partition)) return false;
    const others = candidates.filter((p) => p !== partition);
    const more = (options.partitions ?? 1) > 1 ? Math.min(others.length, random.int(0, (options.partitions ?? 1) - 1)) : 0;
    const partitions = [partition, ...Array.from({ length: more }, () => others.splice(random.int(0, others.length - 1), 1)[0] as number)];
    const batches = new Map(
      partitions.map((p) => {
        const from = this.position(p);
        return [p, this.cluster.records(this.topic, p, from, from + random.int(1, this.maxBatch))] as const;
      }),
    );
    for (const [p, records] of batches) if (records.length === 0) batches.delete(p);
    if (batches.size === 0) return false;
    const life = this.cluster.current(this.topic).life;
    const event: MskEvent = {
      eventSource: 'SelfManagedKafka',
      records: Object.fromEntries([...batches].map(([p, records]) => [`${this.topic}-${p}`, records.map((r) => mskRecord(this.topic, r))])),
    };
    const handle = this.handler();
    this.invocations++;
    const name = [...batches].map(([p, records]) => `${this.topic}-${p}@${(records[0] as StoredRecord).offset}`).join('+');
    const invocation: Invocation = {
      partitions: [...batches.keys()],
      life,
      task: this.scheduler.spawn(
        name,
        () => handle(event),
        (error, result) => {
          this.finish(invocation);
          if (error !== undefined) {
            for (const p of batches.keys()) this.failed(p, error);
            return;
          }
          if (options.loseCommit === true || this.cluster.current(this.topic).life !== life) return;
          for (const [p, records] of batches) this.committed(p, records, result);
        },
      ),
    };
    this.inFlight.push(invocation);
    return true;
  }

  /** After a successful invocation: the partition's offset moves up to its first failed record, or past its batch. */
  private committed(partition: number, records: readonly StoredRecord[], result: InvocationResult | undefined): void {
    // A partial response names every record from the first failed one on: the smallest is where the partition goes on.
    const failed = (result?.batchItemFailures ?? []).filter((f) => f.itemIdentifier.partition === `${this.topic}-${partition}`);
    const failure = failed.length === 0 ? undefined : failed.reduce((a, b) => (b.itemIdentifier.offset < a.itemIdentifier.offset ? b : a));
    const next = failure?.itemIdentifier.offset ?? (records.at(-1) as StoredRecord).offset + 1;
    const halt = result?.halted?.find((h) => h.position.partition === partition);
    if (failure !== undefined) this.failed(partition, halt ?? new Error(`partial batch: from offset ${failure.itemIdentifier.offset}`));
    else this.failures.delete(partition);
    if (next > this.position(partition)) this.cluster.commit(this.group, this.topic, partition, next);
  }

  private finish(invocation: Invocation): void {
    const i = this.inFlight.indexOf(invocation);
    if (i >= 0) this.inFlight.splice(i, 1);
  }

  private failed(partition: number, error: unknown): void {
    const known = this.failures.get(partition);
    this.failures.set(partition, { count: (known?.count ?? 0) + 1, last: error });
  }

  /** Crashes an invocation in flight (a Lambda timeout or kill): the trigger delivers its batch again. */
  crash(task: Task): void {
    const invocation = this.inFlight.find((i) => i.task === task);
    this.scheduler.crash(task);
    if (invocation !== undefined) {
      this.finish(invocation);
      for (const p of invocation.partitions) this.failed(p, new Error('invocation crashed'));
    }
  }

  /** Forgets invocations of an earlier life of the topic as far as delivery goes (they may still run and write). */
  recreated(): void {
    this.failures.clear();
  }
}

/** Holds `triggers` and waits (as the rebuild's drain) until their invocations in flight have ended. */
export const holdTriggers = (triggers: readonly SimTrigger[], scheduler: Scheduler): CommandGate => ({
  pause: async () => {
    for (const trigger of triggers) trigger.paused = true;
    while (triggers.some((t) => t.tasks().length > 0)) await scheduler.point('gate.drain');
  },
  resume: () => {
    for (const trigger of triggers) trigger.paused = false;
    return Promise.resolve();
  },
});
