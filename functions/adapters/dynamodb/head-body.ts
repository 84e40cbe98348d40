/**
 * A head's item in the compact layout: the key, the version the commit's condition reads,
 * `body` (everything else, deflated), `ids` (the recent commands' 64-bit fingerprints, which
 * do not compress) and `cids` (the outbox's commandIds, outbox-body.ts: the fingerprints of
 * those commands are derived from them, not stored in `ids` too). DynamoDB bills a write by
 * the whole item's size, one unit per KB: this is what makes a head cheap to rewrite. Pure
 * codec; aggregates-items.ts dispatches between this layout and the one before it. A head
 * written before `cids` existed (its outbox verbatim, every fingerprint in `ids`) reads as it did.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Reason } from '../../core/wire.ts';
import { aggregateKey } from '../../core/aggregate.ts';
import { fingerprint, type Head, type RecentCommand } from '../../heads/head.ts';
import { cidsBytes, packOutbox, unpackOutbox, uuidsOf, type StoredOutbox } from './outbox-body.ts';

type Item = Record<string, unknown>;

/** Bytes of a fingerprint as `ids` stores it. */
const PRINT_BYTES = 8;

/**
 * Recent commands column by column, positions, times and versions as differences from the
 * entry before (small and alike, so they compress), rejection reasons each stored once.
 * An outcome is a version difference (accepted) or `[i]`, the index of its reason (rejected).
 */
type RecentColumns = [
  tps: string[],
  tp: number[],
  offset: number[],
  at: number[],
  outcome: (number | [number])[],
  reasons: [string, string][],
  /**
   * Where each fingerprint comes from: null, the next one of `ids`; a number, the commandId
   * of `cids` that many places after the one before (starting from -1). Absent: all from `ids`.
   */
  from?: (number | null)[],
];

/** The body: what the key (the aggregate's type and id) and the version leave. */
type Body = [
  state: unknown,
  offsets: Record<string, number>,
  archivedUntil: number,
  outbox: StoredOutbox,
  writtenAt: Head['writtenAt'],
  recent: RecentColumns,
  /** Present on a head upgraded from the previous layout that had archived: its `archivedUntil` then (see `toBodyItem`); else 0 when pages follow. */
  legacyArchiveUntil?: number,
  /** The archive pages the head lists (heads/archive-pages.ts), as `[id, until]`. */
  pages?: [string, number][],
];

const deltas = (values: readonly number[]): number[] => values.map((v, i) => (i === 0 ? v : v - (values[i - 1] as number)));
const sums = (differences: readonly number[]): number[] => {
  let total = 0;
  return differences.map((d) => (total += d));
};

/** The recent commands' columns, and the fingerprints `from` does not derive from `cids`, in order. */
const toColumns = (recent: readonly RecentCommand[], cids: readonly string[]): { columns: RecentColumns; prints: string[] } => {
  const derived = new Map(cids.map((c, k) => [fingerprint(c), k] as const));
  const prints: string[] = [];
  let previous = -1;
  const from = recent.map((r): number | null => {
    const print = fingerprint(r.commandId);
    const k = derived.get(print);
    if (k === undefined) {
      prints.push(print);
      return null;
    }
    const step = k - previous;
    previous = k;
    return step;
  });
  const tps = [...new Set(recent.map((r) => r.tp))];
  const reasons: [string, string][] = [];
  const reasonIndex = new Map<string, number>();
  let version = 0;
  const outcome = recent.map(({ result }): number | [number] => {
    if (result.status === 'accepted') {
      const d = result.version - version;
      version = result.version;
      return d;
    }
    const k = JSON.stringify([result.reason.code, result.reason.message]);
    let i = reasonIndex.get(k);
    if (i === undefined) {
      i = reasons.push([result.reason.code, result.reason.message]) - 1;
      reasonIndex.set(k, i);
    }
    return [i];
  });
  const columns: RecentColumns = [
    tps,
    recent.map((r) => tps.indexOf(r.tp)),
    deltas(recent.map((r) => r.offset)),
    deltas(recent.map((r) => r.at)),
    outcome,
    reasons,
  ];
  if (prints.length < recent.length) columns.push(from);
  return { columns, prints };
};

const fromColumns = (
  aggregateType: string,
  aggregateId: string,
  ids: Uint8Array,
  cids: readonly string[],
  columns: RecentColumns,
): RecentCommand[] => {
  const [tps, tp, offset, at, outcome, reasons, from] = columns;
  const offsets = sums(offset);
  const ats = sums(at);
  let version = 0;
  let next = 0;
  let k = -1;
  const printAt = (i: number): string => {
    const step = from?.[i] ?? null;
    if (step !== null) return fingerprint(cids[(k += step)] as string);
    const print = `\u0000${Buffer.from(ids.subarray(next * PRINT_BYTES, (next + 1) * PRINT_BYTES)).toString('hex')}`;
    next++;
    return print;
  };
  return outcome.map((o, i) => {
    const commandId = printAt(i);
    if (typeof o === 'number') version += o;
    const [code, message] = typeof o === 'number' ? ['', ''] : (reasons[o[0]] as [string, string]);
    const reason: Reason = { code, message };
    return {
      commandId,
      tp: tps[tp[i] as number] as string,
      offset: offsets[i] as number,
      at: ats[i] as number,
      result:
        typeof o === 'number'
          ? { commandId, aggregateType, aggregateId, status: 'accepted', version }
          : { commandId, aggregateType, aggregateId, status: 'rejected', reason },
    };
  });
};

/**
 * The item of a head in the compact layout (without the bookkeeping attributes a write adds).
 * `legacyArchiveUntil`: the newest time the previous layout archived a command of this
 * aggregate at, 0 when it did not; while it is kept, the archive is also read under the keys
 * that layout wrote (by commandId), and only then.
 */
export const toBodyItem = (head: Head, legacyArchiveUntil = 0): Item => {
  const outbox = packOutbox(head, head.outbox);
  const { columns, prints } = toColumns(head.recent, outbox.cids);
  const body: Body = [head.state, head.offsets, head.archivedUntil, outbox.stored, head.writtenAt, columns];
  const pages = head.pages ?? [];
  if (legacyArchiveUntil > 0 || pages.length > 0) body.push(legacyArchiveUntil);
  if (pages.length > 0) body.push(pages.map((p) => [p.id, p.until]));
  return {
    pk: aggregateKey(head.aggregateType, head.aggregateId),
    version: head.version,
    body: deflateRawSync(JSON.stringify(body)),
    ids: Buffer.concat(prints.map((print) => Buffer.from(print.slice(1), 'hex'))),
    ...(outbox.cids.length > 0 ? { cids: cidsBytes(outbox.cids) } : {}),
  };
};

/** True when an item is a head in the compact layout. */
export const isBodyItem = (item: Item): boolean => item.body instanceof Uint8Array;

const bodyOf = (item: Item): Body => JSON.parse(inflateRawSync(item.body as Uint8Array).toString('utf8')) as Body;
const bytesOf = (value: unknown): Uint8Array => (value instanceof Uint8Array ? value : new Uint8Array());

/** Parses a head item in the compact layout, and its `legacyArchiveUntil` (0 when none); our own writes, so the shape is trusted. */
export const fromBodyItem = (item: Item): { readonly head: Head; readonly legacyArchiveUntil: number } => {
  const [state, offsets, archivedUntil, outbox, writtenAt, recent, legacyArchiveUntil, pages] = bodyOf(item);
  // The key is `type#id`, and a type name never holds `#` (core/aggregate.ts).
  const pk = item.pk as string;
  const aggregateType = pk.slice(0, pk.indexOf('#'));
  const aggregateId = pk.slice(pk.indexOf('#') + 1);
  const version = Number(item.version);
  const cids = uuidsOf(bytesOf(item.cids));
  const head: Head = {
    aggregateType,
    aggregateId,
    version,
    state,
    offsets,
    recent: fromColumns(aggregateType, aggregateId, bytesOf(item.ids), cids, recent),
    archivedUntil,
    ...(pages === undefined ? {} : { pages: pages.map(([id, until]) => ({ id, until })) }),
    outbox: unpackOutbox({ aggregateType, aggregateId, version }, outbox, cids),
    writtenAt,
  };
  return { head, legacyArchiveUntil: legacyArchiveUntil ?? 0 };
};
