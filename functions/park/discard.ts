/**
 * Discarding a parked aggregate's sequence (`kafka-aggregates discard`): every record goes to
 * the dead-letter topic, exactly as delivered, with `DiscardedByOperator`, who, when and why; a
 * command gets a rejected result saying so (kept for the command API); then the aggregate is
 * live again. Its state is what it was before the first parked record. Resumable as a release
 * is (park/release.ts): a run that stops is run again, and goes on at `done`.
 *
 * Before the park is lifted the discard is recorded as an operator release of the partition
 * (`discard`, for this aggregate's records from the first parked offset to the last): a batch
 * whose commit was lost delivers those records again after the lift, and the live side then
 * answers each as discarded instead of deciding it (the simulator's `park` kind found that).
 */
import { aggregateKey } from '../core/aggregate.ts';
import { deadLetter, type DeadLetter } from '../core/dead-letter.ts';
import { discardMessage, type Release } from '../core/release.ts';
import type { MskRecord } from '../core/trigger-event.ts';
import { topicPartition, type ResultRecord } from '../core/wire.ts';
import { classify } from '../heads/dedupe.ts';
import { decodeCommand } from '../command/decode.ts';
import { fingerprint, positionKey } from '../heads/partition.ts';
import { registry } from '../core/registry.ts';
import type { UnkeptResult } from '../heads/ports.ts';
import { DISCARDED_BY_OPERATOR, type ParkedAggregate } from './parked.ts';
import {
  beginParkOperation,
  checkTableReady,
  ParkOperationError,
  parkedTrigger,
  type ParkOperator,
  type ParkOperatorDeps,
  type ParkReport,
  readCommands,
} from './release.ts';

/** A run of a parked sequence's records of one life of one topic partition: a discard is recorded for each. */
interface Segment {
  readonly first: MskRecord;
  readonly incarnation?: number;
  readonly to: number;
}

/** The segments of a parked sequence's first `count` records, in order (one, unless the commands topic was recreated or grown while parked). */
const segmentsOf = async (deps: Pick<ParkOperatorDeps, 'park' | 'chunk'>, type: string, id: string, count: number): Promise<Segment[]> => {
  const segments: Segment[] = [];
  for (let from = 1; from <= count; from += deps.chunk ?? 100)
    for (const { record, incarnation } of await readCommands(deps.park, type, id, from, Math.min(count, from + (deps.chunk ?? 100) - 1))) {
      const last = segments.at(-1);
      const same =
        last !== undefined &&
        last.first.topic === record.topic &&
        last.first.partition === record.partition &&
        last.incarnation === incarnation;
      if (same) segments[segments.length - 1] = { ...last, to: record.offset };
      else segments.push({ first: record, to: record.offset, ...(incarnation === undefined ? {} : { incarnation }) });
    }
  return segments;
};

/** Sends an aggregate's parked sequence to the dead-letter topic and returns it to live processing. */
export const discardParked = async (deps: ParkOperatorDeps, type: string, id: string, operator: ParkOperator): Promise<ParkReport> => {
  if ((operator.reason ?? '').trim() === '') throw new ParkOperationError('a discard needs a reason: it is kept in every dead letter');
  await checkTableReady(deps.heads);
  let parked = await beginParkOperation(deps, type, id, 'discarding', operator);
  const by = parked.operator ?? { by: operator.by, at: (deps.now ?? Date.now)(), reason: operator.reason };
  const key = aggregateKey(type, id);
  const incarnation = parked.incarnation ?? (await deps.heads.getCheckpoint(`${parked.topic}-${parked.partition}`))?.incarnation ?? 1;
  const release = (segment: Segment): Release => ({
    action: 'discard',
    aggregate: key,
    from: segment.first.offset,
    to: segment.to,
    reason: by.reason ?? '',
    by: by.by,
    at: new Date(by.at).toISOString(),
    incarnation: segment.incarnation ?? incarnation,
    anchor: { offset: segment.first.offset, fingerprint: fingerprint(segment.first) },
  });
  const message = discardMessage(
    { ...by, reason: by.reason ?? '', at: new Date(by.at).toISOString(), from: parked.firstOffset },
    parked.cause.code,
  );
  const reason = { code: DISCARDED_BY_OPERATOR, message };
  const aggregates = registry(deps.aggregates);
  let discarded = 0;
  let recorded = 0;
  for (;;) {
    if (parked.done >= parked.count) {
      if (recorded < parked.count) {
        for (const segment of await segmentsOf(deps, type, id, (recorded = parked.count)))
          await deps.releases.add(`${segment.first.topic}-${segment.first.partition}`, release(segment));
      }
      if (await deps.park.lift(parked)) break;
      const again = await deps.park.get(type, id);
      if (again === undefined) break;
      parked = again;
      continue;
    }
    const records = await readCommands(deps.park, type, id, parked.done + 1, Math.min(parked.count, parked.done + (deps.chunk ?? 100)));
    const { trigger, lives } = parkedTrigger(records);
    // A command its head knows (decided by an invocation that raced the park, or a re-send of one decided before) keeps its answer.
    const head = (await deps.heads.read([key], [])).heads.get(key);
    const memory = { recent: head?.recent ?? [], offsets: head?.offsets ?? {}, archived: new Map(), dedupeWindowMs: deps.dedupeWindowMs };
    const results: { key: string; result: ResultRecord }[] = [];
    const unkept: UnkeptResult[] = [];
    const letters: DeadLetter[] = [];
    for (const record of trigger) {
      const decoded = await decodeCommand(record, aggregates);
      const known =
        'ok' in decoded ? classify(memory, decoded.ok, positionKey(topicPartition(record), lives.get(record) ?? incarnation)) : undefined;
      if (known?.kind === 'duplicate') {
        results.push({ key: id, result: known.result });
        continue;
      }
      letters.push(deadLetter(record, reason));
      const commandId = 'ok' in decoded ? decoded.ok.envelope.commandId : decoded.bad.commandId;
      if (commandId === null) continue;
      const result: ResultRecord = { commandId, aggregateType: type, aggregateId: id, status: 'rejected', reason };
      results.push({ key: id, result });
      unkept.push({ result, at: record.timestamp });
    }
    await deps.heads.keepResults(unkept, deps.keptResultsMs);
    await deps.publisher.publish({ events: [], results, deadLetters: letters });
    const next: ParkedAggregate = { ...parked, done: parked.done + records.length };
    if (!(await deps.park.update(next, parked)))
      throw new ParkOperationError(`${type} ${id}: another release or discard moved on meanwhile; run it again`);
    discarded += records.length;
    parked = next;
  }
  return { aggregateType: type, aggregateId: id, handled: discarded, accepted: 0, rejected: 0, duplicates: 0, discarded, lifted: true };
};
