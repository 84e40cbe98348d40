/**
 * The checks of the events topic alone: each record read as the event side reads it, versions
 * per aggregate, and each aggregate's own rules; and what the other checks share.
 */
import { splitGeneration } from '../../functions/core/generations.ts';
import { aggregateKey, type AnyAggregate } from '../../functions/core/aggregate.ts';
import { readEvent } from '../../functions/core/event-reader.ts';
import type { EventRecord } from '../../functions/core/wire.ts';
import { registry } from '../../functions/core/registry.ts';
import { LogFold } from '../../functions/rebuild/fold.ts';
import type { TopicRecord, Violation } from './model.ts';

/** JSON with object keys sorted at every level: the same data gives the same text. */
export const canonicalJson = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

export const parse = <T>(value: string | null): T | undefined => {
  if (value === null) return undefined;
  try {
    return JSON.parse(value) as T;
  } catch {
    return undefined;
  }
};

/** Missing numbers of 1..max among `present`, as inclusive ranges. */
export const missingRanges = (present: ReadonlySet<number>, max: number): [number, number][] => {
  const ranges: [number, number][] = [];
  for (let v = 1; v <= max; v++) {
    if (present.has(v)) continue;
    const last = ranges.at(-1);
    if (last !== undefined && last[1] === v - 1) last[1] = v;
    else ranges.push([v, v]);
  }
  return ranges;
};

/**
 * `records` with the partitions merged in the order written: each partition's own order kept,
 * the next record taken from the partition whose next one is the oldest. Read partition by
 * partition, a copy published again on the partition a grown topic moved its key to (a
 * restored outbox) would come before its first appearance on the old one, and seem new.
 * Without timestamps on every record, as given.
 */
const inOrderWritten = (records: readonly TopicRecord[]): readonly TopicRecord[] => {
  if (!records.every((r) => r.timestamp !== undefined)) return records;
  const byPartition = new Map<string, TopicRecord[]>();
  for (const r of records) {
    const key = `${r.topic}\n${r.partition}`;
    const list = byPartition.get(key);
    if (list === undefined) byPartition.set(key, [r]);
    else list.push(r);
  }
  const queues = [...byPartition.values()].map((rs) => ({ rs, next: 0 }));
  const merged: TopicRecord[] = [];
  while (merged.length < records.length) {
    let oldest: (typeof queues)[number] | undefined;
    for (const q of queues)
      if (q.next < q.rs.length && (oldest === undefined || (q.rs[q.next]?.timestamp ?? 0) < (oldest.rs[oldest.next]?.timestamp ?? 0)))
        oldest = q;
    if (oldest === undefined) break;
    merged.push(oldest.rs[oldest.next++] as TopicRecord);
  }
  return merged;
};

/** The events topic read once: each aggregate's distinct versions, and the log's fold. */
export interface EventsRead {
  readonly byAggregate: Map<string, { type: string; id: string; versions: Map<number, { json: string; event: EventRecord }>; max: number }>;
  /** Per aggregate key, its distinct events in version order (as the current code reads them). */
  readonly ordered: Map<string, EventRecord[]>;
  readonly fold: LogFold;
  readonly duplicateEvents: number;
}

/** What one check found. */
export interface Found {
  readonly violations: Violation[];
  readonly lagging?: number;
  readonly notes?: string[];
}

/**
 * The events topic: every record through the event reader (as the rebuild and the event side
 * read: upcasters applied, faults reported), deduplicated by (aggregate, version); content
 * must match (`version-conflict`), versions come in order on each partition (`version-order`; a version's
 * first appearance is the first written, when the records carry their timestamps) and are 1..n
 * (`version-gap`), and every record is a usable event (`unusable-event`).
 */
export const checkEvents = (records: readonly TopicRecord[], aggregates: readonly AnyAggregate[]): EventsRead & Found => {
  const violations: Violation[] = [];
  const byAggregate: EventsRead['byAggregate'] = new Map();
  const known = registry(aggregates);
  const fold = new LogFold(known);
  const maxOnPartition = new Map<string, number>();
  let duplicateEvents = 0;
  for (const record of inOrderWritten(records)) {
    const outcome = readEvent({ key: record.key, value: record.value, position: record }, known);
    fold.applyRead(outcome);
    // Versions are checked on every sound envelope, its data readable or not (that is reported from the fold's unusable list).
    const stored = 'event' in outcome ? outcome.event.stored : outcome.fault.stored;
    if (stored === undefined) continue;
    // Content is compared as stored; the account rules and the projection see the event as the current code reads it.
    const event: EventRecord = 'event' in outcome ? { ...stored, type: outcome.event.event.type, data: outcome.event.event.data } : stored;
    const k = aggregateKey(event.aggregateType, event.aggregateId);
    let entry = byAggregate.get(k);
    if (entry === undefined)
      byAggregate.set(k, (entry = { type: event.aggregateType, id: event.aggregateId, versions: new Map(), max: 0 }));
    const json = JSON.stringify(stored);
    const seen = entry.versions.get(event.version);
    if (seen !== undefined) {
      if (seen.json === json) duplicateEvents++;
      else
        violations.push({
          kind: 'version-conflict',
          aggregateType: entry.type,
          aggregateId: entry.id,
          versions: [event.version],
          commandId: event.commandId,
          message: `version ${event.version} twice with different content (commands ${seen.event.commandId} and ${event.commandId}; the second at partition ${record.partition} offset ${record.offset})`,
        });
      continue;
    }
    // Kafka orders a partition, not a topic: when one aggregate's events lie on more than one
    // partition (the topic grew in place), which comes first across them is not defined. Across
    // generations (core/generations.ts) they are: every version first seen on a newer
    // generation must come after those of the older ones.
    const orderKey = `${k}\n${record.topic}\n${record.partition}`;
    const before = maxOnPartition.get(orderKey) ?? 0;
    const generation = splitGeneration(record.topic).index;
    const older = Math.max(0, ...[...Array(generation).keys()].map((g) => maxOnPartition.get(`${k}\ngeneration ${g}`) ?? 0));
    if (event.version < before || event.version < older)
      violations.push({
        kind: 'version-order',
        aggregateType: entry.type,
        aggregateId: entry.id,
        versions: [event.version, Math.max(before, older)],
        message:
          event.version < before
            ? `version ${event.version} first appeared after version ${before} on ${record.topic} partition ${record.partition} (offset ${record.offset})`
            : `version ${event.version} first appeared on ${record.topic} (partition ${record.partition}, offset ${record.offset}), after version ${older} on an older generation`,
      });
    maxOnPartition.set(orderKey, Math.max(before, event.version));
    const generationKey = `${k}\ngeneration ${generation}`;
    maxOnPartition.set(generationKey, Math.max(maxOnPartition.get(generationKey) ?? 0, event.version));
    entry.versions.set(event.version, { json, event });
    entry.max = Math.max(entry.max, event.version);
  }
  fold.finish();
  for (const u of fold.unusable)
    violations.push({ kind: 'unusable-event', aggregateType: null, aggregateId: null, versions: [], message: `${u.code}: ${u.reason}` });

  const ordered = new Map<string, EventRecord[]>();
  for (const [k, entry] of byAggregate) {
    for (const [from, to] of missingRanges(new Set(entry.versions.keys()), entry.max))
      violations.push({
        kind: 'version-gap',
        aggregateType: entry.type,
        aggregateId: entry.id,
        versions: from === to ? [from] : [from, to],
        message: `version${from === to ? ` ${from} is` : `s ${from}..${to} are`} missing (the log reaches version ${entry.max})`,
      });
    ordered.set(
      k,
      [...entry.versions.values()].map((v) => v.event).sort((a, b) => a.version - b.version),
    );
  }
  return { byAggregate, ordered, fold, duplicateEvents, violations };
};

/** Each aggregate's own rules (its definition's `invariants`), from its events alone. */
export const checkAggregateRules = (ordered: EventsRead['ordered'], aggregates: readonly AnyAggregate[]): Found => {
  const violations: Violation[] = [];
  const definitions = new Map(aggregates.map((a) => [a.type, a]));
  for (const events of ordered.values()) {
    const [first] = events;
    const rules = first === undefined ? undefined : definitions.get(first.aggregateType)?.invariants;
    if (first === undefined || rules === undefined) continue;
    for (const breach of rules(events))
      violations.push({
        kind: breach.rule,
        aggregateType: first.aggregateType,
        aggregateId: first.aggregateId,
        versions: breach.versions,
        ...(breach.commandId === undefined ? {} : { commandId: breach.commandId }),
        message: breach.message,
      });
  }
  return { violations };
};
