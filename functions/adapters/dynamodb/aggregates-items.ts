/**
 * The layout of the aggregates table's items: a head, an archived command, a kept outcome,
 * the control item, and the size of a head's item as DynamoDB counts it (a partition's
 * checkpoint and releases: partition-items.ts). Pure codecs; aggregates-table.ts does the I/O.
 */
import type { EventRecord, Reason, ResultRecord } from '../../core/wire.ts';
import { fingerprint, type ArchivedCommand, type Head, type RecentCommand } from '../../heads/head.ts';
import { aggregateKey } from '../../core/aggregate.ts';
import type { ControlRecord, RebuildProgress } from '../../control/control.ts';
import { isStorableId, itemBytes, MAX_AGGREGATE_ID_CHARS, MAX_COMMAND_ID_CHARS, MAX_NAME_CHARS, toWellFormed } from '../../core/limits.ts';
import type { UnkeptResult } from '../../heads/ports.ts';
import { fromBodyItem, isBodyItem, toBodyItem } from './head-body.ts';

export { itemBytes } from '../../core/limits.ts';

type Item = Record<string, unknown>;

/** Key of a commands partition's checkpoint; `~` cannot start an aggregate type name. */
export const checkpointKey = (tp: string): string => `~partition#${tp}`;
/** Key of an archived command of an aggregate: by its fingerprint, the one identity a stored head keeps. */
export const archiveKey = (aggregateType: string, aggregateId: string, commandId: string): string =>
  `~archived#${aggregateKey(aggregateType, aggregateId)}#${fingerprint(commandId).slice(1)}`;
/** Key of an archived command as the previous layout wrote it: by its commandId. */
export const legacyArchiveKey = (aggregateType: string, aggregateId: string, commandId: string): string =>
  `~command#${aggregateKey(aggregateType, aggregateId)}#${commandId}`;
/** Key of the kept outcome of a command that no head remembers (functions/command/decide-aggregate.ts `unkept`). */
export const resultKey = (aggregateType: string, aggregateId: string, commandId: string): string =>
  `~result#${aggregateKey(aggregateType, aggregateId)}#${commandId}`;
/** Key of what a commandId sent through the command API carried (command-claims.ts). */
export const claimKey = (aggregateType: string, aggregateId: string, commandId: string): string =>
  `~claim#${aggregateKey(aggregateType, aggregateId)}#${commandId}`;
/** Key of the control item: whether the table is in step with the events topic, and the rebuild lock. */
export const CONTROL_KEY = '~control';
/**
 * Key under which the previous layout kept a commands partition's operator releases
 * (core/release.ts); they are now attributes of the partition's checkpoint item, read with it.
 */
export const releasesKey = (tp: string): string => `~release#${tp}`;

/** A recent command as the previous layout stored it: a tuple; the result's aggregate fields are the head's own. */
type StoredRecent =
  | [commandId: string, tp: string, offset: number, at: number, version: number]
  | [commandId: string, tp: string, offset: number, at: number, code: string, message: string];

const unpackRecent = (aggregateType: string, aggregateId: string, stored: readonly StoredRecent[]): RecentCommand[] =>
  stored.map(([commandId, tp, offset, at, ...outcome]) => ({
    commandId,
    tp,
    offset,
    at,
    result:
      outcome.length === 1
        ? { commandId, aggregateType, aggregateId, status: 'accepted', version: outcome[0] }
        : { commandId, aggregateType, aggregateId, status: 'rejected', reason: { code: outcome[0], message: outcome[1] } },
  }));

/** The item of a head (without the bookkeeping attributes a write adds), in the compact layout (head-body.ts `toBodyItem`). */
export const toItem = (head: Head, legacyArchiveUntil = 0): Item => toBodyItem(head, legacyArchiveUntil);

/**
 * Parses a head item, in either layout (compact, or the plain attributes of the release
 * before), and until when the previous layout archived the aggregate's commands (0: never;
 * head-body.ts `toBodyItem`). Our own writes, so the shape is trusted.
 */
export const decodeHead = (item: Item): { readonly head: Head; readonly legacyArchiveUntil: number } => {
  if (isBodyItem(item)) return fromBodyItem(item);
  const head = fromPlainItem(item);
  return { head, legacyArchiveUntil: head.archivedUntil };
};

/** Parses a head item, in either layout. */
export const fromItem = (item: Item): Head => decodeHead(item).head;

const fromPlainItem = (item: Item): Head => ({
  aggregateType: item.aggregateType as string,
  aggregateId: item.aggregateId as string,
  version: Number(item.version),
  state: JSON.parse(item.state as string) as unknown,
  offsets: Object.fromEntries(Object.entries((item.offsets ?? {}) as Record<string, unknown>).map(([k, v]) => [k, Number(v)])),
  ...recentFromItem(item),
  outbox: JSON.parse((item.outbox as string | undefined) ?? '[]') as EventRecord[],
  writtenAt: typeof item.writtenTp === 'string' ? { tp: item.writtenTp, offset: Number(item.writtenOffset) } : null,
});

/** What a reader of outcomes needs of a head item, in either layout; `HEAD_OUTCOME_ATTRIBUTES` reads no more. */
export const recentFromItem = (item: Item): Pick<Head, 'recent' | 'archivedUntil' | 'pages'> & { readonly legacyArchiveUntil: number } => {
  if (isBodyItem(item)) {
    const { head, legacyArchiveUntil } = fromBodyItem(item);
    return {
      recent: head.recent,
      archivedUntil: head.archivedUntil,
      ...(head.pages === undefined ? {} : { pages: head.pages }),
      legacyArchiveUntil,
    };
  }
  const plain = recentFromPlainItem(item);
  return { ...plain, legacyArchiveUntil: plain.archivedUntil };
};

const recentFromPlainItem = (item: Item): Pick<Head, 'recent' | 'archivedUntil'> => ({
  recent: unpackRecent(
    item.aggregateType as string,
    item.aggregateId as string,
    JSON.parse((item.recent as string | undefined) ?? '[]') as StoredRecent[],
  ),
  archivedUntil: Number(item.archivedUntil ?? 0),
});

/** The attributes `recentFromItem` reads (a projection: less to transfer; DynamoDB bills the whole item all the same). */
export const HEAD_OUTCOME_ATTRIBUTES = ['pk', 'body', 'ids', 'cids', 'aggregateType', 'aggregateId', 'recent', 'archivedUntil'] as const;

/** The item of a kept outcome; it expires (DynamoDB TTL, `expiresAt` in seconds) `retentionMs` after its command record's time. */
export const resultItem = (
  result: ResultRecord & { readonly commandId: string; readonly aggregateType: string; readonly aggregateId: string },
  at: number,
  retentionMs: number,
): Item => ({
  pk: resultKey(result.aggregateType, result.aggregateId, result.commandId),
  // The key joins ids that may hold `#`; the identity, stored whole, tells a collision from the outcome.
  commandId: result.commandId,
  aggregateId: result.aggregateId,
  // Free text from user code: stored natively, so made well-formed (the copy on the results topic is exact).
  ...(result.status === 'accepted'
    ? { version: result.version }
    : { code: toWellFormed(result.reason.code), message: toWellFormed(result.reason.message) }),
  ...(result.status === 'parked' ? { parked: true } : {}),
  at,
  expiresAt: Math.ceil((at + retentionMs) / 1000),
});

/** Parses a kept outcome item of the command `commandId` of an aggregate; undefined when the item is another command's (a key collision). */
export const resultFromItem = (aggregateType: string, aggregateId: string, commandId: string, item: Item): ResultRecord | undefined => {
  if (item.commandId !== commandId || item.aggregateId !== aggregateId) return undefined;
  return typeof item.code === 'string'
    ? {
        commandId,
        aggregateType,
        aggregateId,
        status: item.parked === true ? 'parked' : 'rejected',
        reason: { code: item.code, message: typeof item.message === 'string' ? item.message : '' },
      }
    : { commandId, aggregateType, aggregateId, status: 'accepted', version: Number(item.version) };
};

/** The control item's record. */
export const controlFromItem = (item: Item): ControlRecord => {
  const table = typeof item.table === 'string' ? { table: item.table } : {};
  return item.status === 'rebuilding'
    ? {
        status: 'rebuilding',
        epoch: Number(item.epoch),
        progress: item.progress === undefined ? null : (JSON.parse(item.progress as string) as RebuildProgress),
        ...table,
      }
    : { status: 'ready', epoch: Number(item.epoch), ...table };
};

/** The control item of a record. */
export const controlItem = (control: ControlRecord): Item => ({
  pk: CONTROL_KEY,
  status: control.status,
  epoch: control.epoch,
  ...(control.status === 'rebuilding' && control.progress !== null ? { progress: JSON.stringify(control.progress) } : {}),
  ...(control.table === undefined ? {} : { table: control.table }),
});

/** The item of an archived command; it expires (DynamoDB TTL, `expiresAt` in seconds) when the dedupe window has passed. */
export const archiveItem = (aggregateType: string, aggregateId: string, command: ArchivedCommand, windowMs: number): Item => ({
  pk: archiveKey(aggregateType, aggregateId, command.commandId),
  // The key joins ids with '#', which ids may hold: the item says whose it is, and readers check.
  aggregateId,
  print: fingerprint(command.commandId).slice(1),
  version: command.version,
  at: command.at,
  ...(command.rejected === undefined ? {} : { rejected: { code: command.rejected.code, message: command.rejected.message } }),
  expiresAt: Math.ceil((command.at + windowMs) / 1000) + 86_400,
});

/** Parses an archived command item (of either layout) as the archive of `commandId`. */
export const archivedFromItem = (item: Item, commandId: string): ArchivedCommand => ({
  commandId,
  version: Number(item.version),
  at: Number(item.at),
  ...(item.rejected === undefined ? {} : { rejected: item.rejected as Reason }),
});

/** True when an archived command item is the one `lookup` names, not another whose key reads the same. */
export const archivedIs = (item: Item, lookup: { readonly aggregateId: string; readonly commandId: string }): boolean =>
  item.aggregateId === lookup.aggregateId &&
  (typeof item.print === 'string' ? item.print === fingerprint(lookup.commandId).slice(1) : item.commandId === lookup.commandId);

/** Attributes a write adds to the head item beyond `toItem` (a rebuilt head's epoch), at their largest. */
const COMMIT_ATTRIBUTES = { rebuildEpoch: 2 ** 31 };

/** The size of a head's item (as `toItem` makes it) once stored, in bytes. */
export const storedHeadBytes = (item: Item): number => itemBytes({ ...item, ...COMMIT_ATTRIBUTES });

/** The size of a head's item as stored, in bytes. */
export const headItemBytes = (head: Head): number => storedHeadBytes(toItem(head));

/**
 * The items of outcomes no head remembers, one per key (BatchWriteItem refuses a request that
 * names a key twice: the first, as a head's recent commands answer). Ids the edge refuses
 * could never be asked for, and their keys might be refused: not kept.
 */
export const keptResultItems = (unkept: readonly UnkeptResult[], retentionMs: number): Item[] => {
  const items = unkept.flatMap(({ result, at }) =>
    isStorableId(result.commandId, MAX_COMMAND_ID_CHARS) &&
    isStorableId(result.aggregateType, MAX_NAME_CHARS) &&
    isStorableId(result.aggregateId, MAX_AGGREGATE_ID_CHARS)
      ? [
          resultItem(
            { ...result, commandId: result.commandId, aggregateType: result.aggregateType, aggregateId: result.aggregateId },
            at,
            retentionMs,
          ),
        ]
      : [],
  );
  const byKey = new Map<string, Item>();
  for (const item of items) if (!byKey.has(item.pk as string)) byKey.set(item.pk as string, item);
  return [...byKey.values()];
};
