/**
 * A head's item in the compact layout: the key, the version the commit's condition reads,
 * `body` (everything else, deflated) and `ids` (the recent commands' 64-bit fingerprints,
 * which do not compress). DynamoDB bills a write by the whole item's size, one unit per KB:
 * this is what makes a head cheap to rewrite. Pure codec; aggregates-items.ts dispatches
 * between this layout and the one before it.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { EventRecord, Reason } from '../../core/wire.ts';
import { aggregateKey } from '../../core/aggregate.ts';
import { fingerprint, type Head, type RecentCommand } from '../../heads/head.ts';

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
];

/** The body: what the key (the aggregate's type and id) and the version leave. */
type Body = [
  state: unknown,
  offsets: Record<string, number>,
  archivedUntil: number,
  outbox: readonly EventRecord[],
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

const toColumns = (recent: readonly RecentCommand[]): RecentColumns => {
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
  return [
    tps,
    recent.map((r) => tps.indexOf(r.tp)),
    deltas(recent.map((r) => r.offset)),
    deltas(recent.map((r) => r.at)),
    outcome,
    reasons,
  ];
};

const fromColumns = (aggregateType: string, aggregateId: string, ids: Uint8Array, columns: RecentColumns): RecentCommand[] => {
  const [tps, tp, offset, at, outcome, reasons] = columns;
  const offsets = sums(offset);
  const ats = sums(at);
  let version = 0;
  return outcome.map((o, i) => {
    const commandId = `\u0000${Buffer.from(ids.subarray(i * PRINT_BYTES, (i + 1) * PRINT_BYTES)).toString('hex')}`;
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
  const body: Body = [head.state, head.offsets, head.archivedUntil, head.outbox, head.writtenAt, toColumns(head.recent)];
  const pages = head.pages ?? [];
  if (legacyArchiveUntil > 0 || pages.length > 0) body.push(legacyArchiveUntil);
  if (pages.length > 0) body.push(pages.map((p) => [p.id, p.until]));
  return {
    pk: aggregateKey(head.aggregateType, head.aggregateId),
    version: head.version,
    body: deflateRawSync(JSON.stringify(body)),
    ids: Buffer.concat(head.recent.map((r) => Buffer.from(fingerprint(r.commandId).slice(1), 'hex'))),
  };
};

/** True when an item is a head in the compact layout. */
export const isBodyItem = (item: Item): boolean => item.body instanceof Uint8Array;

const bodyOf = (item: Item): Body => JSON.parse(inflateRawSync(item.body as Uint8Array).toString('utf8')) as Body;
const idsOf = (item: Item): Uint8Array => (item.ids instanceof Uint8Array ? item.ids : new Uint8Array());

/** Parses a head item in the compact layout, and its `legacyArchiveUntil` (0 when none); our own writes, so the shape is trusted. */
export const fromBodyItem = (item: Item): { readonly head: Head; readonly legacyArchiveUntil: number } => {
  const [state, offsets, archivedUntil, outbox, writtenAt, recent, legacyArchiveUntil, pages] = bodyOf(item);
  // The key is `type#id`, and a type name never holds `#` (core/aggregate.ts).
  const pk = item.pk as string;
  const aggregateType = pk.slice(0, pk.indexOf('#'));
  const aggregateId = pk.slice(pk.indexOf('#') + 1);
  const head: Head = {
    aggregateType,
    aggregateId,
    version: Number(item.version),
    state,
    offsets,
    recent: fromColumns(aggregateType, aggregateId, idsOf(item), recent),
    archivedUntil,
    ...(pages === undefined ? {} : { pages: pages.map(([id, until]) => ({ id, until })) }),
    outbox,
    writtenAt,
  };
  return { head, legacyArchiveUntil: legacyArchiveUntil ?? 0 };
};
