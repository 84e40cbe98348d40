/**
 * Before a batch decides anything: each of its partitions checked against the table's
 * checkpoint (heads/partition.ts). A recreated topic gets a new incarnation, and a partition
 * new to the table its first checkpoint, each recorded before any decision, so racing
 * invocations agree; a table behind its log stops the batch.
 */
import { topicPartition } from '../core/wire.ts';
import type { TriggerRecord } from '../core/trigger-event.ts';
import { TableBehindLogError } from '../control/control.ts';
import type { CommandLog } from './ports.ts';
import type { HeadsStore } from '../heads/ports.ts';
import type { StampWrite } from '../heads/stamp.ts';
import {
  anchorOf,
  assess,
  firstCheckpoint,
  fingerprint,
  judge,
  nextIncarnation,
  sampledOf,
  type SampledRecord,
  type StoredCheckpoint,
  type Verdict,
} from '../heads/partition.ts';
import { KafkaAggregatesError } from '../core/errors.ts';

/** One partition's records in a batch, in offset order. */
export interface PartitionSpan {
  readonly topic: string;
  readonly partition: number;
  readonly from: number;
  readonly to: number;
  readonly records: readonly TriggerRecord[];
}

/** What the checks need: the commands topic as a log, and the checkpoints in the table. */
export interface PartitionCheckDeps {
  readonly commandLog: CommandLog;
  readonly checkpoints: Pick<HeadsStore, 'putCheckpoint' | 'getCheckpoint'>;
  readonly tableName: string;
}

/** Another invocation kept moving a checkpoint: the batch fails and is retried, idempotently. */
export class CheckpointContendedError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'CheckpointContendedError';
  constructor(readonly tp: string) {
    super(`the checkpoint of ${tp} kept changing under this batch; it is retried`);
  }
}

/** The fingerprint of a record as the trigger gives it. */
export const fingerprintOf = (record: TriggerRecord): string => fingerprint(record.original);

/**
 * Whether the batch is of the life of the topic that `anchor` (a record of the checkpoint's
 * incarnation, or a release's) is from: read from the batch when it holds that offset, else from the log.
 * `unknown` when the record expired from the log.
 */
export const lifeOf = async (
  deps: Pick<PartitionCheckDeps, 'commandLog'>,
  span: PartitionSpan,
  anchor: SampledRecord,
  fingerprintAt: (offset: number) => string | undefined,
): Promise<'same' | 'other' | 'unknown'> => {
  const here = fingerprintAt(anchor.offset);
  if (here !== undefined) return here === anchor.fingerprint ? 'same' : 'other';
  const log = await deps.commandLog.bounds(span.topic, span.partition);
  if (anchor.offset >= log.end) return 'other';
  if (anchor.offset < log.start) return 'unknown';
  const [found] = await deps.commandLog.sample(span.topic, span.partition, anchor.offset, anchor.offset, 1);
  // The anchor is a record, not a marker: in its own life its offset still holds it.
  return found !== undefined && found.offset === anchor.offset && sampledOf(found).fingerprint === anchor.fingerprint ? 'same' : 'other';
};

/**
 * Stores a partition's first checkpoint, with its anchor, before anything is decided under
 * it: a batch that commits heads and dies before its checkpoint would otherwise leave no
 * record of which life of the topic those heads' offsets belong to, and a recreated topic's
 * next batch would take its offsets for theirs. A racing first batch that stored one first
 * is agreed with when its anchor is a record of this batch; otherwise the batch is retried.
 */
const storeFirst = async (
  deps: PartitionCheckDeps,
  tp: string,
  first: StoredCheckpoint,
  fingerprintAt: (offset: number) => string | undefined,
  effective: Map<string, StoredCheckpoint>,
  written: Map<string, StoredCheckpoint>,
  stamp: StampWrite,
): Promise<void> => {
  let stored: StoredCheckpoint = { ...first, stamp: stamp.stamp };
  if (!(await deps.checkpoints.putCheckpoint(first, undefined, stamp))) {
    const now = await deps.checkpoints.getCheckpoint(tp);
    const known = now === undefined ? undefined : anchorOf(now);
    if (now?.incarnation !== 1 || known === undefined || fingerprintAt(known.offset) !== known.fingerprint)
      throw new CheckpointContendedError(tp);
    stored = now;
  }
  effective.set(tp, stored);
  written.set(tp, stored);
};

/**
 * Anchors a checkpoint that knows no record of its life (a rebuild left it before any batch
 * came) at the batch's first record, before anything is decided under it, as a first
 * checkpoint is: heads committed by this batch would otherwise hold offsets that nothing ties
 * to this life, and a recreated topic's next batch would take them for its own. A racing
 * batch that changed it first makes this one go again.
 */
const storeAnchor = async (
  deps: PartitionCheckDeps,
  checkpoint: StoredCheckpoint,
  anchor: SampledRecord,
  effective: Map<string, StoredCheckpoint>,
  written: Map<string, StoredCheckpoint>,
  stamp: StampWrite,
): Promise<void> => {
  const anchored: StoredCheckpoint = { ...checkpoint, anchor };
  if (!(await deps.checkpoints.putCheckpoint(anchored, checkpoint, stamp))) throw new CheckpointContendedError(checkpoint.tp);
  effective.set(checkpoint.tp, anchored);
  written.set(checkpoint.tp, { ...anchored, stamp: stamp.stamp });
};

/** The batch's records, partition by partition. */
export const spansOf = (partitions: readonly (readonly TriggerRecord[])[]): Map<string, PartitionSpan> =>
  new Map(
    partitions.flatMap((records) => {
      const first = records[0];
      const last = records.at(-1);
      if (first === undefined || last === undefined) return [];
      return [
        [topicPartition(first), { topic: first.topic, partition: first.partition, from: first.offset, to: last.offset, records }] as const,
      ];
    }),
  );

/**
 * Checks every partition of the batch; returns the checkpoint each is decided under (stored
 * or about to be: a partition new to the table starts at the batch). `fresh`: the table was
 * created by this batch, so no partition can be behind it.
 */
export const checkPartitions = async (
  deps: PartitionCheckDeps,
  spans: ReadonlyMap<string, PartitionSpan>,
  stored: ReadonlyMap<string, StoredCheckpoint>,
  fresh: boolean,
  stampOf: (tp: string) => StampWrite,
): Promise<{ effective: Map<string, StoredCheckpoint>; written: Map<string, StoredCheckpoint> }> => {
  const effective = new Map<string, StoredCheckpoint>();
  const written = new Map<string, StoredCheckpoint>();
  const behind: string[] = [];
  await Promise.all(
    [...spans].map(async ([tp, span]) => {
      const checkpoint = stored.get(tp);
      const batch = {
        from: span.from,
        to: span.to,
        fingerprintAt: (offset: number) => {
          const record = span.records.find((r) => r.offset === offset);
          return record === undefined ? undefined : fingerprintOf(record);
        },
      };
      const first = span.records[0];
      const anchor = first === undefined ? undefined : { offset: first.offset, fingerprint: fingerprintOf(first) };
      if (checkpoint === undefined && fresh) {
        await storeFirst(deps, tp, firstCheckpoint(tp, span.from, anchor), batch.fingerprintAt, effective, written, stampOf(tp));
        return;
      }
      // No batch completed since the checkpoint was set (a new incarnation, a rebuild): the
      // record it knows of its life tells a recreated topic, which offsets alone cannot.
      const unproven =
        checkpoint?.fingerprint === null && checkpoint.anchor !== undefined
          ? await lifeOf(deps, span, checkpoint.anchor, batch.fingerprintAt)
          : 'same';
      // A partition new to the table at offset 0 has nothing before it; elsewhere the log start tells.
      const logStart = checkpoint === undefined && span.from > 0 ? (await deps.commandLog.bounds(span.topic, span.partition)).start : 0;
      const assessment = unproven === 'other' ? ({ kind: 'recreated' } as const) : assess(checkpoint, batch, logStart);
      let verdict: Verdict = assessment.kind === 'read' ? 'continue' : assessment.kind;
      if (assessment.kind === 'read') {
        // The bounds first, then the records: a record written at the checkpoint's offset in
        // between (a new life filling up) is then either in the sample or past the bounds read,
        // never missing from a sample that the bounds say lies below the end (seed 5302).
        const log = await deps.commandLog.bounds(span.topic, span.partition);
        const records = await deps.commandLog.sample(span.topic, span.partition, assessment.from, assessment.to, 2);
        verdict = judge(checkpoint, batch, records.map(sampledOf), log);
        if (verdict === 'behind')
          behind.push(
            checkpoint === undefined
              ? `${tp} holds records before offset ${span.from} that this table never saw`
              : `${tp} was handled up to offset ${span.from - 1}, but this table only up to ${checkpoint.through}`,
          );
      }
      if (verdict !== 'recreated' || checkpoint === undefined) {
        if (verdict === 'behind') return;
        if (checkpoint === undefined)
          await storeFirst(deps, tp, firstCheckpoint(tp, span.from, anchor), batch.fingerprintAt, effective, written, stampOf(tp));
        else if (checkpoint.fingerprint === null && checkpoint.anchor === undefined && anchor !== undefined)
          await storeAnchor(deps, checkpoint, anchor, effective, written, stampOf(tp));
        else effective.set(tp, checkpoint);
        return;
      }
      // A new life of the topic: offsets start again, and a trigger starts at its beginning.
      const { start } = await deps.commandLog.bounds(span.topic, span.partition);
      if (span.from > start && (await deps.commandLog.sample(span.topic, span.partition, start, span.from - 1, 1)).length > 0) {
        behind.push(`${tp} was recreated, and its records before offset ${span.from} were handled without this table`);
        return;
      }
      const next: StoredCheckpoint = { ...nextIncarnation(checkpoint, span.from, anchor), since: new Date().toISOString() };
      if (await deps.checkpoints.putCheckpoint(next, checkpoint, stampOf(tp))) {
        effective.set(tp, next);
        written.set(tp, { ...next, stamp: stampOf(tp).stamp });
        return;
      }
      // A racing invocation saw the same and recorded it first.
      const now = await deps.checkpoints.getCheckpoint(tp);
      if (now === undefined || now.incarnation <= checkpoint.incarnation) throw new CheckpointContendedError(tp);
      effective.set(tp, now);
      written.set(tp, now);
    }),
  );
  if (behind.length > 0) throw new TableBehindLogError(deps.tableName, behind.join('; '));
  return { effective, written };
};
