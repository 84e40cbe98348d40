/**
 * Folds the events topic into aggregate heads with each aggregate's own `evolve`: the pure
 * part of the snapshot rebuild, of `verify` and of the invariant checker. Records are read
 * through the one event reader (core/event-reader.ts), upcasters included. Dedupes by
 * (aggregateId, version), reports gaps and records it cannot use, and restores what a head
 * needs for dedupe (source offsets, recent commands).
 */
import type { LastSource } from './command-lives.ts';
import { aggregateKey, type AnyAggregate } from '../core/aggregate.ts';
import { readEvent, type EventFault, type ReadEvent, type ReadOutcome, type StoredRecord } from '../core/event-reader.ts';
import { offsetKey } from '../core/generation-log.ts';
import type { LogRecord } from '../core/log.ts';
import { topicPartition } from '../core/wire.ts';
import { emptyHead, type ArchivedCommand, type Head, type RecentCommand } from '../heads/head.ts';
import { MAX_PAGES, PAGE_MARGIN_MS, pageOf, pagesSince, type ArchivePage } from '../heads/archive-pages.ts';
import { positionKey } from '../heads/partition.ts';
import { archivedOf, headOf, keepCommand, withRemembered, type FoldedAggregate, type FoldedHead } from './fold-head.ts';

/** A version that skips ahead: events are missing from the log. */
export interface Gap {
  readonly aggregateType: string;
  readonly aggregateId: string;
  /** The version that should have come next. */
  readonly expected: number;
  readonly found: number;
}

/** A record of the events topic that is not a usable event. */
export interface UnusableRecord {
  readonly partition: number;
  readonly offset: number;
  /** The event reader's fault code (`InvalidEvent`, `UpcastFailed`, …). */
  readonly code: EventFault['code'];
  /** The reader's message: position, then aggregate, version, type and revision when known, and what is wrong. */
  readonly reason: string;
}

/**
 * What applying one record did: `held` is an event ahead of its aggregate's next version,
 * kept until its predecessors arrive (they may lie on a partition read later) or `finish`.
 */
export type FoldStep = 'applied' | 'duplicate' | 'unusable' | 'held';

/** Reads one record of the log (of `topic` unless it names its own) through the event reader. */
export const readLogRecord = (topic: string, r: LogRecord, aggregates: ReadonlyMap<string, AnyAggregate>): ReadOutcome =>
  readEvent({ key: r.key, value: r.value, position: { topic: r.topic ?? topic, partition: r.partition, offset: r.offset } }, aggregates);

/**
 * Reads a chunk of the log through the event reader. A fold that needs nothing of the chunk
 * ahead reads record by record instead (readLogRecord): a chunk's outcomes held at once outlive
 * the young generation and make the garbage collector copy them, costlier than reading them.
 */
export const readChunk = (topic: string, records: readonly LogRecord[], aggregates: ReadonlyMap<string, AnyAggregate>): ReadOutcome[] =>
  records.map((r) => readLogRecord(topic, r, aggregates));

/** The head fields that are a function of the log alone: what a rebuild must reproduce exactly. */
export const canonicalHead = (head: Head): string =>
  JSON.stringify({
    aggregateType: head.aggregateType,
    aggregateId: head.aggregateId,
    version: head.version,
    state: head.state,
    offsets: Object.fromEntries(Object.entries(head.offsets).sort(([a], [b]) => a.localeCompare(b))),
  });

/** An event held until its aggregate reaches the version before it. */
interface HeldEvent {
  readonly aggregate: AnyAggregate;
  readonly read: Pick<ReadEvent, 'stored' | 'event' | 'position'>;
}

/**
 * Folds events into heads, keeping track of which heads changed since the last `takeDirty`.
 * Each aggregate's events are applied in version order whatever order the partitions are read
 * in (an aggregate's events lie on more than one partition once the partition count grew): an
 * event ahead of the next version is held until its predecessors arrive, and `finish` applies
 * what is still held, reporting the gaps, once the whole log was read.
 */
export class LogFold {
  /** Every aggregate, by head key. */
  private readonly heads = new Map<string, FoldedAggregate>();
  /** The same, by aggregate type and id: found without making its head key for every event. */
  private readonly byType = new Map<string, Map<string, FoldedAggregate>>();
  /** Events ahead of their aggregate's next version, by head key and version. */
  private readonly held = new Map<string, Map<number, HeldEvent>>();
  /** Aggregates changed since the last `takeDirty`, in the order they first changed. */
  private readonly dirty = new Set<FoldedAggregate>();
  /** Per commands topic and partition, its key (`topic-partition`): one string each, not one per event. */
  private readonly partitions = new Map<string, Map<number, string>>();
  /** What stored heads remembered before the rebuild, by head key: kept where the rebuilt head covers it. */
  private readonly remembered = new Map<string, readonly RecentCommand[]>();
  /** Per commands partition, the last command of its latest incarnation that caused events: where its life can be checked. */
  readonly lastSources = new Map<string, LastSource>();
  readonly gaps: Gap[] = [];
  readonly unusable: UnusableRecord[] = [];
  duplicates = 0;
  applied = 0;

  /**
   * @param archiveSince commands decided at or after this time (ms) that leave a head's recent
   * window are kept for the archive, as the command side keeps them for its dedupe window
   */
  constructor(
    private readonly aggregates: ReadonlyMap<string, AnyAggregate>,
    private readonly archiveSince = Infinity,
  ) {}

  /** Starts an aggregate from a head written earlier by the same rebuild (resuming). */
  seed(head: Head): void {
    const seeded: FoldedHead = { ...head, offsets: { ...head.offsets }, recent: [...head.recent] };
    const known = this.heads.get(aggregateKey(head.aggregateType, head.aggregateId));
    if (known === undefined) this.add(seeded);
    else known.head = seeded;
  }

  private add(head: FoldedHead): FoldedAggregate {
    const agg: FoldedAggregate = { key: aggregateKey(head.aggregateType, head.aggregateId), head, evicted: undefined };
    this.heads.set(agg.key, agg);
    let ofType = this.byType.get(head.aggregateType);
    if (ofType === undefined) this.byType.set(head.aggregateType, (ofType = new Map<string, FoldedAggregate>()));
    ofType.set(head.aggregateId, agg);
    return agg;
  }

  private partitionOf(source: { readonly topic: string; readonly partition: number }): string {
    let ofTopic = this.partitions.get(source.topic);
    if (ofTopic === undefined) this.partitions.set(source.topic, (ofTopic = new Map<number, string>()));
    let key = ofTopic.get(source.partition);
    if (key === undefined) ofTopic.set(source.partition, (key = topicPartition(source)));
    return key;
  }

  /**
   * Keeps what a stored head remembers of commands the log cannot name (accepted without
   * events, or rejected): its rebuilt head's offsets cover their positions, so without them
   * a redelivery would be answered `OutcomeNotRetained` instead of its outcome.
   */
  remember(head: Head): void {
    this.remembered.set(aggregateKey(head.aggregateType, head.aggregateId), head.recent);
  }

  /** True when the fold already holds this aggregate. */
  has(headKey: string): boolean {
    return this.heads.has(headKey);
  }

  /** Reads and applies one record of the events topic. */
  applyRecord(record: StoredRecord): FoldStep {
    return this.applyRead(readEvent(record, this.aggregates));
  }

  /** Applies what the event reader made of one record: an event, or a fault kept in `unusable`. */
  applyRead(outcome: ReadOutcome): FoldStep {
    if ('fault' in outcome) {
      const { position, code, message } = outcome.fault;
      this.unusable.push({ partition: position.partition, offset: position.offset, code, reason: message });
      return 'unusable';
    }
    return this.apply(this.aggregates.get(outcome.event.stored.aggregateType) as AnyAggregate, outcome.event);
  }

  /** Applies one event of a known aggregate type: the stored envelope, the event as the current code knows it. */
  apply(aggregate: AnyAggregate, read: Pick<ReadEvent, 'stored' | 'event' | 'position'>): FoldStep {
    const event = read.stored;
    // Every event read names its command, a duplicate's too (a resumed rebuild reads some again).
    const partition = this.partitionOf(event.source);
    const at = Date.parse(event.occurredAt);
    const incarnation = event.source.incarnation ?? 1;
    const last = this.lastSources.get(partition);
    // The later command, by incarnation then offset; its source made only then: most events' are not later.
    if (last === undefined || incarnation > last.incarnation || (incarnation === last.incarnation && event.source.offset > last.offset))
      this.lastSources.set(partition, { incarnation, offset: event.source.offset, commandId: event.commandId, at });
    const agg =
      this.byType.get(event.aggregateType)?.get(event.aggregateId) ??
      this.add({ ...emptyHead(event.aggregateType, event.aggregateId, aggregate.initialState), offsets: {}, recent: [] });
    const { key: k, head } = agg;
    const held = this.held.size === 0 ? undefined : this.held.get(k);
    if (event.version <= head.version || held?.has(event.version) === true) {
      this.duplicates++;
      return 'duplicate';
    }
    if (event.version > head.version + 1) {
      if (held === undefined) this.held.set(k, new Map([[event.version, { aggregate, read }]]));
      else held.set(event.version, { aggregate, read });
      return 'held';
    }
    this.evolveHead(agg, aggregate, read, partition, at);
    // Its successors may have come first, from another partition.
    for (let next = held?.get(head.version + 1); next !== undefined; next = held?.get(head.version + 1)) {
      held?.delete(head.version + 1);
      this.evolveHead(agg, next.aggregate, next.read);
    }
    if (held?.size === 0) this.held.delete(k);
    return 'applied';
  }

  /**
   * Once the whole log was read: applies the events still held, each aggregate's in version
   * order. Their predecessors are missing from the log, so each jump is reported as a gap and
   * the fold goes on from the version it finds (the log is the record).
   */
  finish(): void {
    for (const [k, held] of this.held) {
      const agg = this.heads.get(k) as FoldedAggregate;
      for (const version of [...held.keys()].sort((x, y) => x - y)) {
        const { aggregate, read } = held.get(version) as HeldEvent;
        this.evolveHead(agg, aggregate, read);
      }
    }
    this.held.clear();
  }

  /**
   * Per partition of the events topic (keyed as the log's offsets: core/generation-log.ts), the
   * lowest offset of an event still held: a position saved for resuming must not pass it, or
   * the event would never be read again.
   */
  heldFloor(): Map<string, number> {
    const floor = new Map<string, number>();
    for (const held of this.held.values())
      for (const { read } of held.values()) {
        const { topic, partition, offset } = read.position;
        const key = offsetKey(topic, partition);
        floor.set(key, Math.min(floor.get(key) ?? Infinity, offset));
      }
    return floor;
  }

  private evolveHead(
    agg: FoldedAggregate,
    aggregate: AnyAggregate,
    { stored: event, event: current }: Pick<ReadEvent, 'stored' | 'event'>,
    partition = this.partitionOf(event.source),
    at = Date.parse(event.occurredAt),
  ): void {
    const { head } = agg;
    // The log is the record: after a gap the fold goes on from the version it finds, and the gap is reported.
    if (event.version > head.version + 1)
      this.gaps.push({
        aggregateType: event.aggregateType,
        aggregateId: event.aggregateId,
        expected: head.version + 1,
        found: event.version,
      });
    const tp = positionKey(partition, event.source.incarnation ?? 1);
    const { offset } = event.source;
    keepCommand(agg, { commandId: event.commandId, tp, offset, at, version: event.version }, this.archiveSince);
    // In place: no copy of the head (its recent commands, its offsets) per event.
    head.version = event.version;
    head.state = aggregate.evolve(head.state, { type: current.type, data: current.data });
    const before = head.offsets[tp];
    if (before === undefined || offset > before) head.offsets[tp] = offset;
    // A rebuilt head has published everything it holds (a seeded one may carry its old outbox).
    if (head.outbox.length > 0) head.outbox = [];
    head.writtenAt = null;
    this.dirty.add(agg);
    this.applied++;
  }

  /**
   * Heads changed since the last call with the commands they let go of since, as one page
   * (heads/archive-pages.ts) the head now lists, or one item each when its list is full; and
   * forgets both. The heads are copies: the fold goes on changing its own while they are written.
   */
  takeDirty(): { readonly head: Head; readonly page: ArchivePage | null; readonly archive: readonly ArchivedCommand[] }[] {
    const out = [...this.dirty].map((agg) => {
      const { key: k, head } = agg;
      const leaving = agg.evicted?.map(archivedOf) ?? [];
      agg.evicted = undefined;
      const live = pagesSince(head.pages ?? [], this.archiveSince - PAGE_MARGIN_MS);
      const page = leaving.length > 0 && live.length < MAX_PAGES ? pageOf(k, leaving) : null;
      const archive = page === null ? leaving : [];
      const pages = page === null ? live : [...live, { id: page.id, until: page.until }];
      head.archivedUntil = Math.max(head.archivedUntil, ...archive.map((a) => a.at));
      if (pages.length > 0) head.pages = pages;
      else delete head.pages;
      return { head: headOf(head, withRemembered(head, this.remembered.get(k))), page, archive };
    });
    this.dirty.clear();
    return out;
  }

  /** Every head the fold holds, as copies. */
  *all(): Generator<Head> {
    for (const { head } of this.heads.values()) yield headOf(head);
  }

  get size(): number {
    return this.heads.size;
  }
}
