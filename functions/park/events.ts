/**
 * The operator's way out of an aggregate parked on the event side (policy `park`,
 * event/parking.ts): release it, applying its parked events in order to the read models through
 * the code now deployed (upcasters included; its reactions fire now, once), or discard it,
 * sending each event's record to the dead-letter topic with who, when and why (the events stay
 * on the log and in the heads: only the read models never take them). Either way the aggregate
 * is live again only when nothing of its sequence is left.
 *
 * The handover is the command side's (park/release.ts): the live batches append the
 * aggregate's new events while it is parked or released, and the lift is conditional on the
 * count the operator finished with. A run that stops is run again and goes on at `done`: what
 * it applies again is a duplicate to every item (by version: a row that dedupes per partition
 * keeps the last version it took from the sequence, event/dedupe.ts `parkMark`, since its
 * partitions' offsets passed the parked ones meanwhile), and a reaction's commands are
 * sent again with the same commandIds. A discard records a `discard` release of the events
 * partition before the lift, so that the events delivered again are dead-lettered, never applied.
 */
import { aggregateKey } from '../core/aggregate.ts';
import { deadLetter } from '../core/dead-letter.ts';
import { DISCARDED_BY_OPERATOR, discardMessage, type Release } from '../core/release.ts';
import { decodeMskEvent, type TriggerRecord } from '../core/trigger-event.ts';
import { parkMark } from '../event/dedupe.ts';
import { haltError } from '../event/halts.ts';
import { createEventApplier, type EventBatchSummary, type EventSideDeps } from '../event/process-batch.ts';
import type { EventSidePublisherPort } from '../event/ports.ts';
import type { ParkedAggregate, ParkedRecord } from './parked.ts';
import type { ParkStore, ReleaseRecorder } from './ports.ts';
import { beginParkOperation, ParkOperationError, readWhole, type ParkOperator, type ParkReport } from './release.ts';

/** What a release or discard of the event side needs. */
export interface EventParkOperatorDeps {
  /** The event side's park store (the read-models table). */
  readonly park: ParkStore;
  /** The event side's applier over the code now deployed, without parking and census (`parkedApplier`). */
  readonly apply: (records: readonly TriggerRecord[], released: { readonly parkMark: string }) => Promise<EventBatchSummary>;
  /** The events partitions' operator releases, where a discard is recorded. */
  readonly releases: ReleaseRecorder;
  /** Where a discard's dead letters go. */
  readonly publisher: EventSidePublisherPort;
  /** Records per step (each step ends with `done` recorded). @default 100 */
  readonly chunk?: number;
  /** Wall clock (ms). */
  readonly now?: () => number;
}

/**
 * The applier of a release: the event side's parts as deployed, applied as the live side applies
 * them, but not parking (the sequence's own events are what it applies) and not counting the
 * census (the live side counted these records, in log order, when it parked them).
 */
export const parkedApplier = (deps: EventSideDeps): EventParkOperatorDeps['apply'] =>
  createEventApplier({ ...deps, parking: undefined }, { liveVersions: true, census: false });

const chunkOf = async (
  deps: EventParkOperatorDeps,
  parked: ParkedAggregate,
): Promise<{ records: ParkedRecord[]; trigger: TriggerRecord[] }> => {
  const to = Math.min(parked.count, parked.done + (deps.chunk ?? 100));
  // One missing went with the table's items (a park written as it lost them).
  const records = await readWhole(
    deps.park,
    parked.aggregateType,
    parked.aggregateId,
    parked.done + 1,
    to,
    '(the read-models table lost its items): rebuild the read models, which lifts such a park and applies its events',
  );
  // One group per record: the decoder orders a group by offset, and a sequence spans partitions and generations (in version order).
  const groups = Object.fromEntries(records.map((r) => [`seq-${r.seq}`, [r.record]]));
  return { records, trigger: decodeMskEvent({ eventSource: 'aws:kafka', records: groups }).flat() };
};

/** Lifts the park when nothing is left; else the park as it stands now (appended to meanwhile), or undefined when lifted. */
const tryLift = async (deps: EventParkOperatorDeps, parked: ParkedAggregate): Promise<ParkedAggregate | undefined> =>
  (await deps.park.lift(parked)) ? undefined : deps.park.get(parked.aggregateType, parked.aggregateId);

/**
 * How many of a chunk's records (in version order) were applied: those before the first one a
 * halt names. The sequence spans partitions and generations, so a record is named by its
 * topic, partition and offset: an offset alone does not compare across partitions.
 */
const appliedUpTo = (records: readonly ParkedRecord[], halted: EventBatchSummary['halted']): number => {
  const named = records.findIndex(({ record }) =>
    halted.some(
      (h) => h.position.topic === record.topic && h.position.partition === record.partition && h.position.offset === record.offset,
    ),
  );
  return named < 0 ? (halted.length === 0 ? records.length : 0) : named;
};

const step = async (deps: EventParkOperatorDeps, next: ParkedAggregate, expected: ParkedAggregate): Promise<void> => {
  if (!(await deps.park.update(next, expected)))
    throw new ParkOperationError(`${next.aggregateType} ${next.aggregateId}: another release or discard moved on meanwhile; run it again`);
};

/**
 * Applies an aggregate's parked events to the read models through `deps.apply` and returns it
 * to live processing. Resumes a release that stopped. Stops before an event that still halts
 * (`stillFailing`): fix the code and run it again, or discard.
 */
export const releaseParkedEvents = async (
  deps: EventParkOperatorDeps,
  type: string,
  id: string,
  operator: ParkOperator,
): Promise<ParkReport> => {
  let parked: ParkedAggregate | undefined = await beginParkOperation(deps, type, id, 'releasing', operator);
  const report = { aggregateType: type, aggregateId: id, handled: 0, accepted: 0, rejected: 0, duplicates: 0, discarded: 0 };
  while (parked !== undefined) {
    if (parked.done >= parked.count) {
      parked = await tryLift(deps, parked);
      continue;
    }
    const { records, trigger } = await chunkOf(deps, parked);
    const summary = await deps.apply(trigger, { parkMark: parkMark(`${parked.topic}-${parked.partition}`, parked.firstOffset) });
    const upTo = appliedUpTo(records, summary.halted);
    const halt = summary.halted[0];
    report.handled += upTo;
    report.accepted += upTo - summary.deadLettered;
    report.rejected += summary.deadLettered;
    report.duplicates += summary.duplicates;
    const next: ParkedAggregate = { ...parked, done: parked.done + upTo, ...(halt === undefined ? {} : { status: 'parked' as const }) };
    await step(deps, next, parked);
    if (halt !== undefined) {
      const error = haltError(halt);
      const record = records[upTo] as ParkedRecord;
      return {
        ...report,
        lifted: false,
        stillFailing: { seq: record.seq, offset: record.record.offset, reason: `${error.name}: ${error.message}` },
      };
    }
    parked = next;
  }
  return { ...report, lifted: true };
};

/** Sends an aggregate's parked events to the dead-letter topic and returns it to live processing; its read models never take them. */
export const discardParkedEvents = async (
  deps: EventParkOperatorDeps,
  type: string,
  id: string,
  operator: ParkOperator,
): Promise<ParkReport> => {
  if ((operator.reason ?? '').trim() === '') throw new ParkOperationError('a discard needs a reason: it is kept in every dead letter');
  let parked: ParkedAggregate | undefined = await beginParkOperation(deps, type, id, 'discarding', operator);
  const by = parked.operator ?? { by: operator.by, at: (deps.now ?? Date.now)(), reason: operator.reason };
  const release = (p: ParkedAggregate): Release => ({
    action: 'discard',
    aggregate: aggregateKey(type, id),
    from: p.firstOffset,
    to: p.lastOffset,
    reason: by.reason ?? '',
    by: by.by,
    at: new Date(by.at).toISOString(),
  });
  let discarded = 0;
  let recorded = -1;
  while (parked !== undefined) {
    if (parked.done >= parked.count) {
      // Before the lift: a redelivery of the batch that parked them is dead-lettered too, never applied.
      if (recorded < parked.lastOffset) await deps.releases.add(`${parked.topic}-${parked.partition}`, release(parked));
      recorded = parked.lastOffset;
      parked = await tryLift(deps, parked);
      continue;
    }
    const { records, trigger } = await chunkOf(deps, parked);
    const reason = { code: DISCARDED_BY_OPERATOR, message: discardMessage(release(parked), parked.cause.code) };
    await deps.publisher.publish({ commands: [], deadLetters: trigger.map((r) => deadLetter(r, reason)) });
    const next: ParkedAggregate = { ...parked, done: parked.done + records.length };
    await step(deps, next, parked);
    discarded += records.length;
    parked = next;
  }
  return { aggregateType: type, aggregateId: id, handled: discarded, accepted: 0, rejected: 0, duplicates: 0, discarded, lifted: true };
};
