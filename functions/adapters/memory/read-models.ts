/**
 * The read-models table in memory, as adapters/dynamodb/read-models-table.ts uses DynamoDB:
 * projection rows and reaction checkpoints written on condition of their revision, the
 * control item, the operator releases of the events partitions, batched consistent reads of
 * 100 keys per request. Each request is one scheduler point (interleave.ts).
 */
import { addRelease, type Release } from '../../core/release.ts';
import {
  ControlConflictError,
  itemId,
  RevisionConflictError,
  type BatchSnapshot,
  type ItemKey,
  type ReadModels,
  type ReadModelsControl,
  type StoredItem,
} from '../../event/ports.ts';
import { copy, immediate, perform, type Interleaver } from './interleave.ts';

type Entry =
  | { readonly kind: 'item'; readonly key: ItemKey; readonly item: StoredItem }
  | { readonly kind: 'control'; readonly control: ReadModelsControl }
  | { readonly kind: 'releases'; readonly releases: readonly Release[] };

const CONTROL = itemId({ pk: '~control', sk: 'read-models' });
const releasesId = (tp: string) => itemId({ pk: '~release', sk: tp });

/** The read-models table in memory. */
export class MemoryReadModels implements ReadModels {
  private entries = new Map<string, Entry>();

  constructor(
    readonly tableName = 'read-models',
    private readonly io: Interleaver = immediate,
  ) {}

  /** A copy of every item. */
  dump(): Map<string, Entry> {
    return copy(this.entries);
  }

  /** Replaces every item (a restore; an empty map: the table lost its items). */
  restore(entries: ReadonlyMap<string, Entry>): void {
    this.entries = copy(new Map(entries));
  }

  private entry(id: string): Entry | undefined {
    const entry = this.entries.get(id);
    return entry === undefined ? undefined : copy(entry);
  }

  private itemAt(key: ItemKey): StoredItem | undefined {
    const entry = this.entry(itemId(key));
    return entry?.kind === 'item' ? entry.item : undefined;
  }

  async readBatch(keys: readonly ItemKey[], partitions: readonly string[]): Promise<BatchSnapshot> {
    const snapshot: BatchSnapshot = { items: new Map(), control: undefined, releases: new Map(partitions.map((tp) => [tp, []])) };
    let control: ReadModelsControl | undefined;
    const ids = [...new Set([...keys.map(itemId), CONTROL, ...partitions.map(releasesId)])];
    const tpOf = new Map(partitions.map((tp) => [releasesId(tp), tp]));
    for (let i = 0; i < ids.length; i += 100)
      await perform(this.io, 'readModels.readBatch', () => {
        for (const id of ids.slice(i, i + 100)) {
          const entry = this.entry(id);
          if (entry?.kind === 'item') snapshot.items.set(id, entry.item);
          else if (entry?.kind === 'control') control = entry.control;
          else if (entry?.kind === 'releases') snapshot.releases.set(tpOf.get(id) as string, [...entry.releases]);
        }
      });
    return { ...snapshot, control };
  }

  async write(key: ItemKey, next: Omit<StoredItem, 'revision'>, expectedRevision: number): Promise<void> {
    const lost = await perform(this.io, 'readModels.write', () => {
      const current = this.itemAt(key);
      if ((current?.revision ?? 0) !== expectedRevision) return { current };
      this.entries.set(itemId(key), copy({ kind: 'item', key, item: { ...next, revision: expectedRevision + 1 } }));
      return undefined;
    });
    if (lost !== undefined) throw new RevisionConflictError(key, expectedRevision, lost.current);
  }

  get(key: ItemKey): Promise<StoredItem | undefined> {
    return perform(this.io, 'readModels.get', () => this.itemAt(key));
  }

  query(pk: string): Promise<{ readonly key: ItemKey; readonly item: StoredItem }[]> {
    return perform(this.io, 'readModels.query', () =>
      [...this.entries.values()]
        .flatMap((e) => (e.kind === 'item' && e.key.pk === pk ? [copy({ key: e.key, item: e.item })] : []))
        .sort((a, b) => (a.key.sk < b.key.sk ? -1 : a.key.sk > b.key.sk ? 1 : 0)),
    );
  }

  delete(key: ItemKey): Promise<void> {
    return perform(this.io, 'readModels.delete', () => {
      this.entries.delete(itemId(key));
    });
  }

  /** A query, then deletes of 25 per request (as the adapter's BatchWriteItem). */
  async wipe(pk: string): Promise<number> {
    const rows = await this.query(pk);
    for (let i = 0; i < rows.length; i += 25)
      await perform(this.io, 'readModels.wipe', () => rows.slice(i, i + 25).forEach((r) => this.entries.delete(itemId(r.key))));
    return rows.length;
  }

  getControl(): Promise<ReadModelsControl | undefined> {
    return perform(this.io, 'readModels.getControl', () => {
      const entry = this.entry(CONTROL);
      return entry?.kind === 'control' ? entry.control : undefined;
    });
  }

  async putControl(status: ReadModelsControl['status'], expectedRevision: number): Promise<ReadModelsControl> {
    const next = { status, revision: expectedRevision + 1 };
    const held = await perform(this.io, 'readModels.putControl', () => {
      const entry = this.entry(CONTROL);
      const revision = entry?.kind === 'control' ? entry.control.revision : 0;
      if (revision !== expectedRevision || (expectedRevision === 0 && entry !== undefined)) return false;
      this.entries.set(CONTROL, { kind: 'control', control: next });
      return true;
    });
    if (!held) throw new ControlConflictError(this.tableName, expectedRevision);
    return next;
  }

  /** Records an operator release for an events partition. */
  addRelease(tp: string, release: Release): Promise<Release[]> {
    return perform(this.io, 'readModels.addRelease', () => {
      const entry = this.entry(releasesId(tp));
      const releases = addRelease(entry?.kind === 'releases' ? entry.releases : [], release);
      this.entries.set(releasesId(tp), { kind: 'releases', releases });
      return releases;
    });
  }
}
