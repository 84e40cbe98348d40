/**
 * The item of an archive page (heads/archive-pages.ts): its key names the aggregate and the
 * page's id; `ids` holds the commands' 64-bit fingerprints, `body` (deflated) their versions
 * and times as differences and the rejections' reasons. About 12 bytes a command: a page of
 * 25 fits in one write unit. Pure codec; aggregates-table.ts does the I/O.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { aggregateKey } from '../../core/aggregate.ts';
import { toWellFormed } from '../../core/limits.ts';
import type { ArchivePage } from '../../heads/archive-pages.ts';
import { fingerprint, type ArchivedCommand } from '../../heads/head.ts';

type Item = Record<string, unknown>;

/** Bytes of a fingerprint in `ids`. */
const PRINT_BYTES = 8;

/** Versions and times as differences from the command before, and rejections by index: `[i, code, message]`. */
type PageBody = [versions: number[], at: number[], rejected: [number, string, string][]];

const deltas = (values: readonly number[]): number[] => values.map((v, i) => (i === 0 ? v : v - (values[i - 1] as number)));
const sums = (differences: readonly number[]): number[] => {
  let total = 0;
  return differences.map((d) => (total += d));
};

/** Key of an archive page; `~` cannot start an aggregate type name, and the id is the last 16 characters. */
export const pageKey = (aggregateType: string, aggregateId: string, id: string): string =>
  `~page#${aggregateKey(aggregateType, aggregateId)}#${id}`;

/** The item of a page of an aggregate; it expires (DynamoDB TTL, seconds) two days after the dedupe window has passed its newest command. */
export const pageItem = (aggregateType: string, aggregateId: string, page: ArchivePage, windowMs: number): Item => {
  const body: PageBody = [
    deltas(page.commands.map((c) => c.version)),
    deltas(page.commands.map((c) => c.at)),
    page.commands.flatMap((c, i) =>
      c.rejected === undefined ? [] : [[i, toWellFormed(c.rejected.code), toWellFormed(c.rejected.message)] as [number, string, string]],
    ),
  ];
  return {
    pk: pageKey(aggregateType, aggregateId, page.id),
    ids: Buffer.concat(page.commands.map((c) => Buffer.from(fingerprint(c.commandId).slice(1), 'hex'))),
    body: deflateRawSync(JSON.stringify(body)),
    until: page.until,
    expiresAt: Math.ceil((page.until + windowMs) / 1000) + 2 * 86_400,
  };
};

/** Parses a page item; our own writes, so the shape is trusted. */
export const pageFromItem = (item: Item): ArchivePage => {
  const pk = item.pk as string;
  const [versions, at, rejected] = JSON.parse(inflateRawSync(item.body as Uint8Array).toString('utf8')) as PageBody;
  const ids = item.ids as Uint8Array;
  const reasons = new Map(rejected.map(([i, code, message]) => [i, { code, message }]));
  const version = sums(versions);
  const ats = sums(at);
  const commands = version.map((v, i): ArchivedCommand => {
    const reason = reasons.get(i);
    return {
      commandId: `\u0000${Buffer.from(ids.subarray(i * PRINT_BYTES, (i + 1) * PRINT_BYTES)).toString('hex')}`,
      version: v,
      at: ats[i] as number,
      ...(reason === undefined ? {} : { rejected: reason }),
    };
  });
  return { id: pk.slice(-16), until: Number(item.until), commands };
};
