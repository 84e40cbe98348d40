/**
 * check-deploy's comparison of read-model items: the rows and checkpoints in the table
 * against those the new code's replay built, each pair compared only when both applied the
 * same versions (otherwise the event side is in flight, and a difference says nothing of the
 * code), and where two values first differ, for the report.
 */
import type { ItemKey, StoredItem } from '../event/ports.ts';

/** A projection row or reaction checkpoint the new code would build differently. */
export interface RowChange {
  readonly pk: string;
  readonly sk: string;
  readonly kind: 'differs' | 'only in table' | 'only in replay';
  /** Where the two first differ (`data.balance: 150 → 15000`). */
  readonly detail: string;
}

/** JSON with object keys sorted, so that equal values print equal whatever their key order. */
export const canonical = (value: unknown): string =>
  JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );

const shown = (value: unknown): string => {
  const text = value === undefined ? '(none)' : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 79)}…` : text;
};

/** The first path where `before` and `after` differ, with both values; empty when they are equal. */
export const firstDifference = (before: unknown, after: unknown, path = ''): string => {
  if (canonical(before) === canonical(after)) return '';
  const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;
  if (isMap(before) && isMap(after) && Array.isArray(before) === Array.isArray(after)) {
    const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
    for (const key of keys) {
      const found = firstDifference(before[key], after[key], path === '' ? key : `${path}.${key}`);
      if (found !== '') return found;
    }
  }
  return `${path === '' ? '(value)' : path}: ${shown(before)} → ${shown(after)}`;
};

type Items = readonly { readonly key: ItemKey; readonly item: StoredItem }[];

/** The items of one partition key, table against replay; `comparable` says which the replay covers (the sample). */
export const rowChanges = (pk: string, table: Items, replayed: Items, comparable: (item: StoredItem) => boolean) => {
  const rebuilt = new Map(replayed.map(({ key, item }) => [key.sk, item]));
  const changes: RowChange[] = [];
  let compared = 0;
  let notInStep = 0;
  for (const { key, item } of table) {
    const other = rebuilt.get(key.sk);
    rebuilt.delete(key.sk);
    if (!comparable(item)) continue;
    compared++;
    if (other === undefined) changes.push({ ...key, kind: 'only in table', detail: 'the new code builds no such item' });
    else if (canonical(item.versions) !== canonical(other.versions)) notInStep++;
    else if (canonical(item.data) !== canonical(other.data))
      changes.push({ ...key, kind: 'differs', detail: firstDifference({ data: item.data }, { data: other.data }) });
  }
  for (const [sk, item] of rebuilt)
    if (comparable(item)) {
      compared++;
      changes.push({ pk, sk, kind: 'only in replay', detail: 'the new code builds an item the table lacks' });
    }
  return { compared, notInStep, changes };
};
