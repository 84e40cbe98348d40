/**
 * The aggregates table in memory: heads with their conditional commit, partition checkpoints,
 * the control item, the archive, kept outcomes and the operator releases of the commands
 * partitions, as one map of items. Each method is the requests the DynamoDB adapter
 * (adapters/dynamodb/aggregates-table.ts, rebuilt-heads.ts) sends, each request one
 * scheduler point (interleave.ts): batched reads and writes go in groups of 100 and 25 keys,
 * and the rebuild's fenced writes read their fences in one request and write in later ones,
 * as the adapter does. Items are copies: nothing a caller changes afterwards reaches the table.
 */
import { addRelease, type Release } from '../../core/release.ts';
import type { ResultRecord } from '../../core/wire.ts';
import type { ControlRecord } from '../../control/control.ts';
import type { ArchivedCommand, Head } from '../../heads/head.ts';
import type { ArchivePage, PageRef, PageWrite } from '../../heads/archive-pages.ts';
import type { StoredCheckpoint } from '../../heads/partition.ts';
import type { ArchiveLookup, HeadsSnapshot, HeadsStore, UnkeptResult } from '../../heads/ports.ts';
import type { StampWrite } from '../../heads/stamp.ts';
import { loaded, tokenOf, type Loaded, type Synced, type SyncToken } from '../../heads/stream.ts';
import type { RebuildHeadsStore } from '../../rebuild/ports.ts';
import { headItemBytes } from '../dynamodb/aggregates-items.ts';
import { putRebuiltAll, readRebuilt, scanAll, type ItemsAccess } from './rebuilt-heads.ts';
import { copy, immediate, perform, type Interleaver } from './interleave.ts';
import {
  archiveKey,
  checkpointKey,
  CONTROL,
  groups,
  pageKey,
  releasesKey,
  resultKey,
  stampKey,
  storedHead,
  withoutStamp,
  type HeadsItem,
  type HeadsItems,
} from './heads-items.ts';

export { withRelease, type HeadsItem, type HeadsItems } from './heads-items.ts';

/** The aggregates table in memory; `io` lets a scheduler interleave its requests. */
export class MemoryHeadsStore implements HeadsStore, RebuildHeadsStore {
  private items = new Map<string, HeadsItem>();
  /** Restores and copies land in a new table (as every DynamoDB restore and import does): another identity. */
  private generation = 1;
  private readonly sizes = new WeakMap<Head, number>();

  constructor(
    readonly tableName = 'aggregates',
    private readonly io: Interleaver = immediate,
  ) {}

  /** A copy of every item (a backup, or what a checker reads). */
  dump(): Map<string, HeadsItem> {
    return copy(this.items);
  }

  /** Replaces every item (a table restored from a backup, or a copy that is not one point in time). */
  restore(items: HeadsItems): void {
    this.items = copy(new Map(items));
    this.generation++;
  }

  identity(): Promise<string> {
    return perform(this.io, 'heads.identity', () => `${this.tableName}#${this.generation}`);
  }

  private get(key: string): HeadsItem | undefined {
    const item = this.items.get(key);
    return item === undefined ? undefined : copy(item);
  }

  /** Keeps a copy of an item, a head as the DynamoDB adapter's item of it reads back (heads-items.ts `storedHead`). */
  private put(key: string, item: HeadsItem): void {
    this.items.set(key, item.kind === 'head' ? { ...item, head: storedHead(item.head) } : copy(item));
  }

  private headAt(key: string): Head | undefined {
    const item = this.get(key);
    return item?.kind === 'head' ? item.head : undefined;
  }

  /** BatchGetItem: groups of 100 keys, each one consistent request. */
  private async batchGet(op: string, keys: readonly string[]): Promise<Map<string, HeadsItem>> {
    const found = new Map<string, HeadsItem>();
    for (const group of groups([...new Set(keys)], 100))
      await perform(this.io, op, () => {
        for (const key of group) {
          const item = this.get(key);
          if (item !== undefined) found.set(key, item);
        }
      });
    return found;
  }

  /** BatchWriteItem: groups of 25 puts, each one request. */
  private async batchPut(op: string, entries: readonly (readonly [string, HeadsItem])[]): Promise<void> {
    for (const group of groups(entries, 25)) await perform(this.io, op, () => group.forEach(([key, item]) => this.put(key, item)));
  }

  async read(aggregateKeys: readonly string[], tps: readonly string[], withControl = true): Promise<HeadsSnapshot> {
    const found = await this.batchGet('heads.read', [
      ...(withControl ? [CONTROL] : []),
      ...aggregateKeys,
      ...tps.flatMap((tp) => [checkpointKey(tp), releasesKey(tp), stampKey(tp)]),
    ]);
    const heads = new Map<string, Head>();
    const checkpoints = new Map<string, StoredCheckpoint>();
    const releases = new Map<string, readonly Release[]>();
    const stamps = new Map<string, string>();
    let control: ControlRecord | undefined;
    for (const [key, item] of found) {
      if (item.kind === 'control') control = item.control;
      else if (item.kind === 'head') heads.set(key, item.head);
      else if (item.kind === 'checkpoint') checkpoints.set(item.checkpoint.tp, item.checkpoint);
      else if (item.kind === 'releases') releases.set(key.slice(releasesKey('').length), item.releases);
      else if (item.kind === 'stamp') stamps.set(key.slice(stampKey('').length), item.stamp);
    }
    return { heads, checkpoints, releases, stamps, control };
  }

  async load(key: string): Promise<Loaded> {
    return loaded(key, await perform(this.io, 'heads.load', () => this.headAt(key)));
  }

  async trySync(token: SyncToken, next: Head): Promise<Synced> {
    return perform(this.io, 'heads.commit', (): Synced => {
      const stored = this.headAt(token.key);
      if ((stored?.version ?? 0) !== token.version) return { outcome: 'conflict', resync: loaded(token.key, stored) };
      this.put(token.key, { kind: 'head', head: next });
      return { outcome: 'written', token: tokenOf(token.key, next) };
    });
  }

  /** The item's size as DynamoDB counts it (the adapter's own measure), once per head: a head is not changed once made. */
  sizeOf(head: Head): number {
    let bytes = this.sizes.get(head);
    if (bytes === undefined) this.sizes.set(head, (bytes = headItemBytes(head)));
    return bytes;
  }

  /** The adapter's conditions, the stamp's included: one UpdateItem of the checkpoint item there. */
  putCheckpoint(next: StoredCheckpoint, previous: StoredCheckpoint | undefined, stamp?: StampWrite): Promise<boolean> {
    return perform(this.io, 'heads.putCheckpoint', () => {
      const item = this.get(checkpointKey(next.tp));
      const stored = item?.kind === 'checkpoint' ? item.checkpoint : undefined;
      const holds =
        (previous === undefined
          ? item === undefined
          : stored !== undefined &&
            stored.incarnation === previous.incarnation &&
            stored.through === previous.through &&
            stored.sealed === previous.sealed) &&
        (stamp === undefined || this.stampOf(next.tp) === stamp.expected);
      if (holds) {
        this.put(checkpointKey(next.tp), { kind: 'checkpoint', checkpoint: withoutStamp(next) });
        if (stamp !== undefined) this.put(stampKey(next.tp), { kind: 'stamp', stamp: stamp.stamp });
      }
      return holds;
    });
  }

  getCheckpoint(tp: string): Promise<StoredCheckpoint | undefined> {
    return perform(this.io, 'heads.getCheckpoint', () => {
      const item = this.get(checkpointKey(tp));
      const stamp = this.stampOf(tp);
      return item?.kind !== 'checkpoint' ? undefined : stamp === undefined ? item.checkpoint : { ...item.checkpoint, stamp };
    });
  }

  private stampOf(tp: string): string | undefined {
    const item = this.get(stampKey(tp));
    return item?.kind === 'stamp' ? item.stamp : undefined;
  }

  /** As the adapter: one UpdateItem per partition, whatever the stamp was. */
  async stampCheckpoints(tps: readonly string[], stamp: string): Promise<void> {
    for (const tp of tps) await perform(this.io, 'heads.stampCheckpoints', () => this.put(stampKey(tp), { kind: 'stamp', stamp }));
  }

  getControl(): Promise<ControlRecord | undefined> {
    return perform(this.io, 'heads.getControl', () => {
      const item = this.get(CONTROL);
      return item?.kind === 'control' ? item.control : undefined;
    });
  }

  putControl(next: ControlRecord, expected: ControlRecord | undefined): Promise<boolean> {
    return perform(this.io, 'heads.putControl', () => {
      const item = this.get(CONTROL);
      const stored = item?.kind === 'control' ? item.control : undefined;
      // The adapter's condition: status and epoch as expected (absent when undefined); the progress is not compared.
      const holds = expected === undefined ? item === undefined : stored?.status === expected.status && stored.epoch === expected.epoch;
      if (holds) this.put(CONTROL, { kind: 'control', control: next });
      return holds;
    });
  }

  async readArchive(lookups: readonly ArchiveLookup[]): Promise<ArchivedCommand[]> {
    const found = await this.batchGet(
      'heads.readArchive',
      lookups.map((l) => archiveKey(l.aggregateType, l.aggregateId, l.commandId)),
    );
    return [...found.values()].flatMap((item) => (item.kind === 'archived' ? [item.command] : []));
  }

  archive(aggregateType: string, aggregateId: string, commands: readonly ArchivedCommand[], _windowMs: number): Promise<void> {
    return this.batchPut(
      'heads.archive',
      commands.map((command) => [archiveKey(aggregateType, aggregateId, command.commandId), { kind: 'archived', command }] as const),
    );
  }

  /** PutItem of one page (content-addressed, so a second write of it changes nothing). */
  putPage(aggregateType: string, aggregateId: string, page: ArchivePage, _windowMs: number): Promise<void> {
    return perform(this.io, 'heads.putPage', () => this.put(pageKey(aggregateType, aggregateId, page.id), { kind: 'page', page }));
  }

  /** BatchWriteItem of pages, 25 per request. */
  putPages(pages: readonly PageWrite[], _windowMs: number): Promise<void> {
    return this.batchPut(
      'heads.putPages',
      pages.map((w) => [pageKey(w.aggregateType, w.aggregateId, w.page.id), { kind: 'page', page: w.page }] as const),
    );
  }

  async readPages(aggregateType: string, aggregateId: string, refs: readonly PageRef[]): Promise<ArchivePage[]> {
    if (refs.length === 0) return [];
    const found = await this.batchGet(
      'heads.readPages',
      refs.map((r) => pageKey(aggregateType, aggregateId, r.id)),
    );
    return [...found.values()].flatMap((item) => (item.kind === 'page' ? [item.page] : []));
  }

  keepResults(unkept: readonly UnkeptResult[], _retentionMs: number): Promise<void> {
    const byKey = new Map<string, HeadsItem>();
    for (const { result, at } of unkept) {
      if (result.commandId === null || result.aggregateType === null || result.aggregateId === null) continue;
      const key = resultKey(result.aggregateType, result.aggregateId, result.commandId);
      if (!byKey.has(key)) byKey.set(key, { kind: 'result', result, at });
    }
    return this.batchPut('heads.keepResults', [...byKey]);
  }

  /** A kept outcome by commandId (what the command API reads), undefined when none is kept. */
  keptResult(aggregateType: string, aggregateId: string, commandId: string): ResultRecord | undefined {
    const item = this.get(resultKey(aggregateType, aggregateId, commandId));
    return item?.kind === 'result' ? item.result : undefined;
  }

  scanAll(): Promise<{ heads: Head[]; checkpoints: Map<string, StoredCheckpoint>; rebuildEpoch: number }> {
    return scanAll(this.access());
  }

  /** As the adapter: per group of 99, one read of the lock and the fences, then the writes it allows, 25 per request. */
  putRebuiltAll(heads: readonly Head[], epoch: number, concurrency: number): Promise<{ written: number; fencedOff: number }> {
    return putRebuiltAll(this.access(), heads, epoch, concurrency);
  }

  readRebuilt(aggregateKeys: readonly string[], epoch?: number): Promise<Map<string, Head>> {
    return readRebuilt(this.access(), aggregateKeys, epoch);
  }

  /** What the rebuild's requests (rebuilt-heads.ts) reach of the items. */
  private access(): ItemsAccess {
    return {
      io: this.io,
      items: () => this.items.values(),
      get: (key) => this.get(key),
      keep: (key, item) => this.items.set(key, item),
      batchGet: (op, keys) => this.batchGet(op, keys),
    };
  }

  /** The releases of a commands partition, by consistent read. */
  getReleases(tp: string): Promise<Release[]> {
    return perform(this.io, 'heads.getReleases', () => {
      const item = this.get(releasesKey(tp));
      return item?.kind === 'releases' ? [...item.releases] : [];
    });
  }

  /** Records an operator release for a commands partition (the adapter's conditional read-and-put, as one request here). */
  addRelease(tp: string, release: Release): Promise<Release[]> {
    return perform(this.io, 'heads.addRelease', () => {
      const item = this.get(releasesKey(tp));
      const releases = addRelease(item?.kind === 'releases' ? item.releases : [], release);
      this.put(releasesKey(tp), { kind: 'releases', releases });
      return releases;
    });
  }
}
