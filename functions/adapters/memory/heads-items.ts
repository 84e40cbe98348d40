/**
 * The in-memory aggregates table's items and their keys (heads-store.ts), the same key
 * space the DynamoDB adapter uses, and what a restore or a copy of the table hands over.
 */
import { aggregateKey } from '../../core/aggregate.ts';
import { addRelease, type Release } from '../../core/release.ts';
import type { ResultRecord } from '../../core/wire.ts';
import type { ControlRecord } from '../../control/control.ts';
import type { ArchivedCommand, Head } from '../../heads/head.ts';
import type { ArchivePage } from '../../heads/archive-pages.ts';
import type { StoredCheckpoint } from '../../heads/partition.ts';
import { fromItem, toItem } from '../dynamodb/aggregates-items.ts';

/** One item of the table. */
export type HeadsItem =
  | { readonly kind: 'control'; readonly control: ControlRecord }
  | { readonly kind: 'head'; readonly head: Head; readonly rebuildEpoch?: number }
  | { readonly kind: 'checkpoint'; readonly checkpoint: StoredCheckpoint }
  /** A partition's control stamp (heads/stamp.ts): an attribute of its checkpoint item in DynamoDB, an item of its own here. */
  | { readonly kind: 'stamp'; readonly stamp: string }
  | { readonly kind: 'releases'; readonly releases: readonly Release[] }
  | { readonly kind: 'archived'; readonly command: ArchivedCommand }
  | { readonly kind: 'page'; readonly page: ArchivePage }
  | { readonly kind: 'result'; readonly result: ResultRecord; readonly at: number };

/** A head as the DynamoDB adapter's item of it reads back (commandIds as fingerprints), a copy of its own: the simulator checks that layout. */
export const storedHead = (head: Head): Head => fromItem(toItem(head));

/** The table's items by key, as a restore or a copy hands them over. */
export type HeadsItems = ReadonlyMap<string, HeadsItem>;

/** Keys of the table's items. */
export const CONTROL = '~control';
export const checkpointKey = (tp: string) => `~partition#${tp}`;
export const releasesKey = (tp: string) => `~releases#${tp}`;
export const stampKey = (tp: string) => `~stamp#${tp}`;
export const archiveKey = (type: string, id: string, commandId: string) => `~archive#${aggregateKey(type, id)}#${commandId}`;
export const pageKey = (type: string, id: string, page: string) => `~page#${aggregateKey(type, id)}#${page}`;
export const resultKey = (type: string, id: string, commandId: string) => `~result#${aggregateKey(type, id)}#${commandId}`;

/** `items` in groups of at most `size`, as batched requests go. */
export const groups = <T>(items: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, i * size + size));

/** `items` with an operator release of a commands partition added, unless they hold it (recorded again into a restored table). */
export const withRelease = (items: HeadsItems, tp: string, release: Release): HeadsItems => {
  const item = items.get(releasesKey(tp));
  const kept = item?.kind === 'releases' ? item.releases : [];
  if (kept.some((r) => r.at === release.at && r.from === release.from && r.to === release.to)) return items;
  return new Map([...items, [releasesKey(tp), { kind: 'releases', releases: addRelease(kept, release) }]]);
};

/** The rebuild's fences: never over a newer rebuild's head, never lowering a stored version. */
export const writable = (current: HeadsItem | undefined, head: Head, epoch: number): boolean =>
  current?.kind !== 'head' || ((current.rebuildEpoch ?? 0) <= epoch && current.head.version <= head.version);

/** A checkpoint as its item holds it: the stamp is written apart (stampKey). */
export const withoutStamp = (checkpoint: StoredCheckpoint): StoredCheckpoint => {
  const rest = { ...checkpoint };
  delete rest.stamp;
  return rest;
};
