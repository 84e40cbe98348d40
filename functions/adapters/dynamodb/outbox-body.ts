/**
 * A head's outbox as its compact item stores it (head-body.ts): each event without what the
 * head already says (its aggregate, its version, its eventId) or what it repeats (its
 * correlation when it is its command's own id), positions and times as differences, and the
 * commandIds of UUID form as 16 bytes each in the item's `cids`, from which the recent
 * commands' fingerprints are derived instead of stored again. A burst of 70 commands writes
 * about 19 bytes an event instead of 53 (45 of event, 8 of fingerprint): the head after a
 * burst is what the next write is billed by (a write costs the larger of before and after).
 * An event the compact form would not give back exactly is stored as it is. Pure codec.
 */
import { isDeepStrictEqual } from 'node:util';
import { eventId, type EventRecord } from '../../core/wire.ts';

/**
 * An event in compact form: its command (an index into `cids`, or the commandId itself), type,
 * revision (null: absent), data, record time and source offset (differences from the event
 * before), source topic and partition, and what differs from the usual (`extra`).
 */
type Packed = [
  command: number | string,
  type: string,
  revision: number | null,
  data: unknown,
  at: number,
  topic: string,
  partition: number,
  offset: number,
  incarnation: number,
  extra?: Extra,
];

/** Fields an event has only sometimes: `c` a correlation other than the commandId (null: none), `m` its metadata. */
interface Extra {
  c?: string | null;
  m?: Record<string, unknown>;
}

/** An outbox as stored: compact events, and verbatim ones where the compact form would not do. */
export type StoredOutbox = (Packed | EventRecord)[];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Bytes of a commandId in `cids`. */
const UUID_BYTES = 16;

const uuidAt = (cids: Uint8Array, k: number): string =>
  Buffer.from(cids.subarray(k * UUID_BYTES, (k + 1) * UUID_BYTES))
    .toString('hex')
    .replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-');

/** The commandIds `cids` holds, in order. */
export const uuidsOf = (cids: Uint8Array): string[] =>
  Array.from({ length: Math.floor(cids.length / UUID_BYTES) }, (_, k) => uuidAt(cids, k));

/** What `unpack` needs besides the stored outbox: whose events, and the version the last one brought. */
interface Owner {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly version: number;
}

const unpackOne = (owner: Owner, version: number, p: Packed, commandId: string, at: number, offset: number): EventRecord => {
  const [, type, revision, data, , topic, partition, , incarnation, extra] = p;
  return {
    eventId: eventId(owner.aggregateType, owner.aggregateId, version),
    aggregateType: owner.aggregateType,
    aggregateId: owner.aggregateId,
    version,
    type,
    ...(revision === null ? {} : { revision }),
    data,
    commandId,
    ...(extra?.c === null ? {} : { correlationId: extra?.c ?? commandId }),
    occurredAt: new Date(at).toISOString(),
    ...(extra?.m === undefined ? {} : { metadata: extra.m }),
    source: { topic, partition, offset, ...(incarnation > 1 ? { incarnation } : {}) },
  };
};

/** The outbox of a head at `owner.version`, from its stored form (or the verbatim events of the layout before) and `cids`. */
export const unpackOutbox = (owner: Owner, stored: StoredOutbox, cids: readonly string[]): EventRecord[] => {
  let at = 0;
  let offset = 0;
  return stored.map((p, i) => {
    if (!Array.isArray(p)) return p;
    at += p[4];
    offset += p[7];
    const commandId = typeof p[0] === 'number' ? (cids[p[0]] as string) : p[0];
    return unpackOne(owner, owner.version - stored.length + 1 + i, p, commandId, at, offset);
  });
};

/** The stored form of `outbox` (of a head at `owner.version`) and the commandIds it put in `cids`, in order. */
export const packOutbox = (owner: Owner, outbox: readonly EventRecord[]): { readonly stored: StoredOutbox; readonly cids: string[] } => {
  const cids: string[] = [];
  const index = new Map<string, number>();
  const stored: StoredOutbox = [];
  let at = 0;
  let offset = 0;
  outbox.forEach((event, i) => {
    const plain = JSON.parse(JSON.stringify(event)) as EventRecord;
    const time = Date.parse(plain.occurredAt);
    const { source } = plain;
    const extra: Extra = {};
    if (plain.correlationId !== plain.commandId) extra.c = plain.correlationId ?? null;
    if (plain.metadata !== undefined) extra.m = plain.metadata;
    const known = index.get(plain.commandId);
    const command = known ?? (UUID.test(plain.commandId) ? cids.length : plain.commandId);
    const packed: Packed = [
      command,
      plain.type,
      plain.revision ?? null,
      plain.data,
      time - at,
      source.topic,
      source.partition,
      source.offset - offset,
      source.incarnation ?? 1,
    ];
    if (Object.keys(extra).length > 0) packed.push(extra);
    const version = owner.version - outbox.length + 1 + i;
    const back =
      Number.isSafeInteger(time) && Number.isSafeInteger(source.offset)
        ? unpackOne(owner, version, packed, plain.commandId, time, source.offset)
        : undefined;
    if (back === undefined || !isDeepStrictEqual(back, plain)) {
      stored.push(plain);
      return;
    }
    if (typeof command === 'number' && known === undefined) {
      index.set(plain.commandId, command);
      cids.push(plain.commandId);
    }
    at = time;
    offset = source.offset;
    stored.push(packed);
  });
  return { stored, cids };
};

/** `cids` as the item stores it. */
export const cidsBytes = (cids: readonly string[]): Buffer => Buffer.concat(cids.map((c) => Buffer.from(c.replaceAll('-', ''), 'hex')));
