/**
 * The aggregate head: everything the command side keeps per aggregate, in one item. Pure
 * types and rules; the DynamoDB layout lives in adapters/dynamodb/aggregates-table.ts.
 */
import { hash } from 'node:crypto';
import type { EventRecord, Reason, ResultRecord } from '../core/wire.ts';
import type { PageRef } from './archive-pages.ts';

/** Outcome of a command, remembered so that a redelivery or a re-send gets the same answer. */
export interface RecentCommand {
  readonly commandId: string;
  /**
   * Position key of the record's partition: `topic-partition`, with `~<incarnation>` once the
   * topic was recreated (partition.ts), so offsets of two lives of a topic never meet.
   */
  readonly tp: string;
  readonly offset: number;
  /** The command record's timestamp (ms): the time the command was decided at. */
  readonly at: number;
  readonly result: ResultRecord;
}

/**
 * A command that no longer fits the head's recent window, kept apart for the dedupe window:
 * an acceptance (the command side answers a re-sent commandId with it), or a rejection (the
 * command API answers with it; the command side decides a rejected command sent again anew).
 */
export interface ArchivedCommand {
  readonly commandId: string;
  /** The version it led to; 0 for a rejection. */
  readonly version: number;
  /** Present when the command was rejected: why. */
  readonly rejected?: Reason;
  /** The command record's timestamp (ms). */
  readonly at: number;
}

/** The latest committed state of one aggregate. */
export interface Head {
  readonly aggregateType: string;
  readonly aggregateId: string;
  /** Number of events of the aggregate; 0 when it has none (an item then exists only to remember commands accepted without events). */
  readonly version: number;
  readonly state: unknown;
  /** Highest source offset handled, per position key (`topic-partition[~incarnation]`). */
  readonly offsets: Readonly<Record<string, number>>;
  /** The most recent commands with their results, oldest first. */
  readonly recent: readonly RecentCommand[];
  /** Timestamp (ms) of the newest command archived as an item of its own (not in a page); 0 when none was. */
  readonly archivedUntil: number;
  /** The archive pages (archive-pages.ts) still within the dedupe window, oldest first; absent when none. */
  readonly pages?: readonly PageRef[];
  /** Events committed with this head and published in the batch that wrote it. */
  readonly outbox: readonly EventRecord[];
  /** Source position of the batch that wrote this head: the outbox is confirmed once that partition's checkpoint covers it. */
  readonly writtenAt: { readonly tp: string; readonly offset: number } | null;
}

/** A head of an aggregate that has never had an event. */
export const emptyHead = (aggregateType: string, aggregateId: string, initialState: unknown): Head => ({
  aggregateType,
  aggregateId,
  version: 0,
  state: initialState,
  offsets: {},
  recent: [],
  archivedUntil: 0,
  outbox: [],
  writtenAt: null,
});

const HEX16 = /^[0-9a-f]{16}$/;

/** True when `commandId` is a fingerprint rather than a commandId. */
export const isFingerprint = (commandId: string): boolean =>
  commandId.length === 17 && commandId.startsWith('\u0000') && HEX16.test(commandId.slice(1));

/**
 * What a stored head remembers a command by instead of its commandId: `\u0000` and the first
 * 64 bits of the SHA-256 of the commandId, in hex (docs/DESIGN.md states the odds of two
 * commands of an aggregate sharing one). A head read back from the table gives its recent
 * commands' commandIds (and their results') in this form; one decided since, the commandId itself.
 */
export const fingerprint = (commandId: string): string =>
  isFingerprint(commandId) ? commandId : `\u0000${hash('sha256', commandId, 'hex').slice(0, 16)}`;

/** A test of whether a remembered command is `commandId`, by the commandId or by its fingerprint. */
export const isCommand = (commandId: string): ((r: { readonly commandId: string }) => boolean) => {
  const print = fingerprint(commandId);
  return (r) => r.commandId === commandId || r.commandId === print;
};

/** A remembered result as the answer to `commandId` (it may remember the command by its fingerprint). */
export const answerTo = (result: ResultRecord, commandId: string): ResultRecord =>
  result.commandId === commandId ? result : { ...result, commandId };

/** How a message names a remembered command: its commandId, or its fingerprint when that is all the head keeps. */
export const nameOf = (commandId: string): string => (isFingerprint(commandId) ? `with fingerprint ${commandId.slice(1)}` : commandId);

/** The accepted result a head remembers for `commandId`, if it still keeps it in its recent window. */
export const acceptedIn = (head: Pick<Head, 'recent'>, commandId: string): ResultRecord | undefined => {
  const same = isCommand(commandId);
  const result = head.recent.find((r) => same(r) && r.result.status === 'accepted')?.result;
  return result === undefined ? undefined : answerTo(result, commandId);
};

/**
 * How many recent commands a head keeps beyond those of the batch that writes it, unless it
 * keeps more within one write unit: few enough that a head rewritten at a trickle fits in
 * one (1 KB) as stored. Older ones are archived (a re-sent commandId is looked up there, as a
 * new one always is once a head archives).
 */
export const RECENT_COMMANDS = 40;
/** A write unit: DynamoDB bills a write by the KB of the larger of the item before and after. */
export const WRITE_UNIT_BYTES = 1024;
/** DynamoDB's item limit is 400 KB; a head, measured as stored, stays below this to leave room. */
export const MAX_HEAD_BYTES = 350 * 1024;
/** Longest rejection message a head keeps (and a result carries): user code may say a lot. */
export const MAX_REASON_CHARS = 512;
