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
import { decodeMskEvent } from '../core/trigger-event.ts';
import { topicPartition, type ResultRecord } from '../core/wire.ts';
import { classify } from '../heads/dedupe.ts';
import { decodeCommand } from '../command/decode.ts';
import { fingerprint, positionKey } from '../heads/partition.ts';
import { registry } from '../core/registry.ts';
import type { UnkeptResult } from '../heads/ports.ts';
import { DISCARDED_BY_OPERATOR, type ParkedAggregate } from './parked.ts';
import { beginParkOperation, ParkOperationError, type ParkOperator, type ParkOperatorDeps, type ParkReport } from './release.ts';

/** Sends an aggregate's parked sequence to the dead-letter topic and returns it to live processing. */
export const discardParked = async (deps: ParkOperatorDeps, type: string, id: string, operator: ParkOperator): Promise<ParkReport> => {
  if ((operator.reason ?? '').trim() === '') throw new ParkOperationError('a discard needs a reason: it is kept in every dead letter');
  let parked = await beginParkOperation(deps, type, id, 'discarding', operator);
  const by = parked.operator ?? { by: operator.by, at: (deps.now ?? Date.now)(), reason: operator.reason };
  const tp = `${parked.topic}-${parked.partition}`;
  const key = aggregateKey(type, id);
  const [first] = await deps.park.read(type, id, 1, 1);
  const incarnation = parked.incarnation ?? (await deps.heads.getCheckpoint(tp))?.incarnation ?? 1;
  const release = (to: number): Release => ({
    action: 'discard',
    aggregate: key,
    from: parked.firstOffset,
    to,
    reason: by.reason ?? '',
    by: by.by,
    at: new Date(by.at).toISOString(),
    incarnation,
    ...(first === undefined ? {} : { anchor: { offset: first.record.offset, fingerprint: fingerprint(first.record) } }),
  });
  const reason = { code: DISCARDED_BY_OPERATOR, message: discardMessage(release(parked.lastOffset), parked.cause.code) };
  const aggregates = registry(deps.aggregates);
  let discarded = 0;
  let recorded = -1;
  for (;;) {
    if (parked.done >= parked.count) {
      if (recorded < parked.lastOffset) await deps.releases.add(tp, release((recorded = parked.lastOffset)));
      if (await deps.park.lift(parked)) break;
      const again = await deps.park.get(type, id);
      if (again === undefined) break;
      parked = again;
      continue;
    }
    const records = await deps.park.read(type, id, parked.done + 1, Math.min(parked.count, parked.done + (deps.chunk ?? 100)));
    const trigger = decodeMskEvent({ eventSource: 'aws:kafka', records: { parked: records.map((r) => r.record) } }).flat();
    // A command its head knows (decided by an invocation that raced the park, or a re-send of one decided before) keeps its answer.
    const head = (await deps.heads.read([key], [])).heads.get(key);
    const memory = { recent: head?.recent ?? [], offsets: head?.offsets ?? {}, archived: new Map(), dedupeWindowMs: deps.dedupeWindowMs };
    const results: { key: string; result: ResultRecord }[] = [];
    const unkept: UnkeptResult[] = [];
    const letters: DeadLetter[] = [];
    for (const record of trigger) {
      const decoded = await decodeCommand(record, aggregates);
      const known = 'ok' in decoded ? classify(memory, decoded.ok, positionKey(topicPartition(record), incarnation)) : undefined;
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
