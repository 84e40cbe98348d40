/**
 * The pure heart of the command side: folds one aggregate's commands of a batch, in order,
 * through decide/evolve against its head, deduplicating by source offset and commandId. The
 * result is what to commit (one head), what to publish and what to answer; no I/O.
 */
import { isRejection, type Message } from '../core/aggregate.ts';
import { eventId, topicPartition, type EventRecord, type Reason, type ResultRecord } from '../core/wire.ts';
import type { RawRecord } from '../core/msk-event.ts';
import type { IncomingCommand } from './decode.ts';
import { MAX_HEAD_BYTES, outboxConfirmed, RECENT_COMMANDS, type Head, type PublishWatermark, type RecentCommand } from './head.ts';

/** What one aggregate's share of a batch comes to. */
export interface AggregateOutcome {
  /** One result per command, in order, including the original results re-emitted for duplicates. */
  readonly results: readonly ResultRecord[];
  /** Commands that broke the aggregate rather than a business rule (decide threw, head too large). */
  readonly deadLetters: readonly { readonly record: RawRecord; readonly reason: Reason }[];
  /** Events to publish, in version order: the unconfirmed outbox first, then the new ones. */
  readonly toPublish: readonly EventRecord[];
  /** The head to commit, conditional on `base.version`; null when nothing new was decided. */
  readonly next: Head | null;
  readonly counts: { accepted: number; rejected: number; duplicates: number };
}

const utf8Length = (text: string): number => {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff ? (i++, 4) : 3;
  }
  return bytes;
};

const jsonBytes = (value: unknown): number => utf8Length(JSON.stringify(value));

/** The event record of `event`, decided for `incoming` at `version`. */
export const eventRecord = (incoming: IncomingCommand, event: Message, version: number, now: Date): EventRecord => {
  const { envelope, record } = incoming;
  return {
    eventId: eventId(envelope.aggregateType, envelope.aggregateId, version),
    aggregateType: envelope.aggregateType,
    aggregateId: envelope.aggregateId,
    version,
    type: event.type,
    data: event.data,
    commandId: envelope.commandId,
    occurredAt: now.toISOString(),
    ...(envelope.metadata === undefined ? {} : { metadata: envelope.metadata }),
    source: { topic: record.topic, partition: record.partition, offset: record.offset },
  };
};

/** Folds `commands` (all for `base`'s aggregate, in partition order) against `base`. */
export const decideAggregate = (
  base: Head,
  commands: readonly IncomingCommand[],
  watermarks: ReadonlyMap<string, PublishWatermark>,
  now: Date,
  maxHeadBytes = MAX_HEAD_BYTES,
): AggregateOutcome => {
  const { aggregateType, aggregateId } = base;
  const confirmed = outboxConfirmed(base, watermarks);
  const carried = confirmed ? [] : base.outbox;
  const results: ResultRecord[] = [];
  const deadLetters: { record: RawRecord; reason: Reason }[] = [];
  const recent: RecentCommand[] = [...base.recent];
  const offsets: Record<string, number> = { ...base.offsets };
  const events: EventRecord[] = [];
  const counts = { accepted: 0, rejected: 0, duplicates: 0 };
  let state = base.state;
  let version = base.version;
  let fixedBytes = jsonBytes(carried) + jsonBytes(recent) + 512;
  let eventBytes = 0;
  let last: { tp: string; offset: number } | null = null;

  const rejected = (envelope: IncomingCommand['envelope'], reason: Reason): ResultRecord => ({
    commandId: envelope.commandId,
    aggregateType,
    aggregateId,
    status: 'rejected',
    reason,
  });

  for (const incoming of commands) {
    const { record, envelope, aggregate } = incoming;
    const tp = topicPartition(record);
    // Redelivered record: answer as before, change nothing. Records older than the recent
    // window are known handled by the stored offset, but their answer is no longer kept.
    const original = recent.find((r) => r.tp === tp && r.offset === record.offset);
    const seen = offsets[tp];
    if (original !== undefined || (seen !== undefined && record.offset <= seen)) {
      if (original !== undefined) results.push(original.result);
      counts.duplicates++;
      continue;
    }
    const resent = recent.find((r) => r.commandId === envelope.commandId && r.result.status === 'accepted');
    if (resent !== undefined) {
      // Same commandId at a new offset: at most one effect per command. Remember this offset
      // too, so that a redelivery of this record gets the same answer.
      results.push(resent.result);
      counts.duplicates++;
      const entry: RecentCommand = { commandId: envelope.commandId, tp, offset: record.offset, result: resent.result };
      recent.push(entry);
      fixedBytes += jsonBytes(entry);
      continue;
    }

    let result: ResultRecord;
    if (envelope.expectedVersion !== undefined && envelope.expectedVersion !== version) {
      result = rejected(envelope, {
        code: 'VersionMismatch',
        message: `expected version ${envelope.expectedVersion}, but ${aggregateType} ${aggregateId} is at version ${version}`,
      });
    } else {
      let decided: { events: EventRecord[]; state: unknown } | Reason;
      try {
        const decision = aggregate.decide(incoming.command, state, { aggregateId, version, commandId: envelope.commandId, now });
        if (isRejection(decision)) {
          decided = { code: decision.code, message: decision.message };
        } else {
          let next = state;
          const produced = (decision as readonly Message[]).map((event, i): EventRecord => {
            next = aggregate.evolve(next, event);
            return eventRecord(incoming, event, version + i + 1, now);
          });
          decided = { events: produced, state: next };
        }
      } catch (error) {
        const reason = { code: 'DecideFailed', message: `${aggregateType}.decide or evolve threw: ${(error as Error).message}` };
        deadLetters.push({ record, reason });
        decided = reason;
      }
      if ('code' in decided) {
        result = rejected(envelope, decided);
      } else {
        const added = jsonBytes(decided.events);
        const size = fixedBytes + eventBytes + added + jsonBytes(decided.state);
        if (size > maxHeadBytes) {
          const reason = {
            code: 'AggregateTooLarge',
            message: `committing this command would make the head of ${aggregateType} ${aggregateId} about ${size} bytes; the limit is ${maxHeadBytes}`,
          };
          deadLetters.push({ record, reason });
          result = rejected(envelope, reason);
        } else {
          events.push(...decided.events);
          eventBytes += added;
          // Only commands with events move the stored offset, so that a head rebuilt from the
          // events topic alone has the same offsets. A rejection redelivered past it is decided
          // again against the same state, which gives the same answer.
          if (decided.events.length > 0) {
            offsets[tp] = record.offset;
            last = { tp, offset: record.offset };
          }
          state = decided.state;
          version += decided.events.length;
          result = { commandId: envelope.commandId, aggregateType, aggregateId, status: 'accepted', version };
        }
      }
    }
    if (result.status === 'accepted') counts.accepted++;
    else counts.rejected++;
    results.push(result);
    const entry: RecentCommand = { commandId: envelope.commandId, tp, offset: record.offset, result };
    recent.push(entry);
    fixedBytes += jsonBytes(entry);
  }

  if (events.length === 0 || last === null) {
    return { results, deadLetters, toPublish: carried, next: null, counts };
  }
  const keep = Math.max(RECENT_COMMANDS, commands.length);
  const next: Head = {
    aggregateType,
    aggregateId,
    version,
    state,
    offsets,
    recent: recent.slice(-keep),
    outbox: [...carried, ...events],
    writtenAt: last,
  };
  return { results, deadLetters, toPublish: next.outbox, next, counts };
};
