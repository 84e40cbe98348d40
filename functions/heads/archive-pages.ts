/**
 * The archive in pages: commands that leave a head's recent window go, many at a time, into
 * one immutable item (a page) that the head lists for as long as the dedupe window needs
 * them. A page is written when the recent window fills, so a trickle writes one page per
 * `RECENT_COMMANDS - RECENT_AFTER_PAGE + 1` commands and a burst one per batch, instead of an
 * item per command. A page's id is a hash of its content: racing deciders that evict the same
 * commands write the same item, and ones that evict others never overwrite each other's.
 * A head whose list is full archives per command (the items of ports.ts `archive`). Pure.
 */
import { hash } from 'node:crypto';
import { fingerprint, isCommand, type ArchivedCommand } from './head.ts';

/** A page as a head lists it: its id (16 hex digits) and the newest command time it holds (ms). */
export interface PageRef {
  readonly id: string;
  readonly until: number;
}

/** A page with its commands, each named by its fingerprint (heads/head.ts `fingerprint`). */
export interface ArchivePage extends PageRef {
  readonly commands: readonly ArchivedCommand[];
}

/** A page to write, and whose. */
export interface PageWrite {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly page: ArchivePage;
}

/** Pages a head lists at most: the list must leave a head rewritten at a trickle within one write unit. */
export const MAX_PAGES = 12;
/** Recent commands a head keeps once it has written a page (it writes one when it holds more than RECENT_COMMANDS). */
export const RECENT_AFTER_PAGE = 15;
/**
 * How long past the dedupe window a page stays listed: record times of a partition are not
 * strictly ordered, and a command older than the newest must still find its page.
 */
export const PAGE_MARGIN_MS = 86_400_000;

/** The page of `commands` (one per fingerprint, an acceptance over a rejection), of the aggregate `key`. */
export const pageOf = (key: string, commands: readonly ArchivedCommand[]): ArchivePage => {
  const byPrint = new Map<string, ArchivedCommand>();
  for (const c of commands) {
    const print = fingerprint(c.commandId);
    const seen = byPrint.get(print);
    if (seen === undefined || seen.rejected !== undefined) byPrint.set(print, { ...c, commandId: print });
  }
  const kept = [...byPrint.values()];
  const id = hash('sha256', `${key}\u0000${JSON.stringify(kept)}`, 'hex').slice(0, 16);
  return { id, until: Math.max(0, ...kept.map((c) => c.at)), commands: kept };
};

/** The pages still needed by commands at or after `since` (ms): those holding a command at or after it. */
export const pagesSince = (pages: readonly PageRef[], since: number): PageRef[] => pages.filter((p) => p.until >= since);

/** The archived command of `commandId` in `pages`, an acceptance over a rejection; undefined when none holds it. */
export const findInPages = (pages: readonly ArchivePage[], commandId: string): ArchivedCommand | undefined => {
  const same = isCommand(commandId);
  let found: ArchivedCommand | undefined;
  for (const page of pages)
    for (const c of page.commands)
      if (same(c) && (found === undefined || (found.rejected !== undefined && c.rejected === undefined))) found = { ...c, commandId };
  return found;
};

/** Pages a warm function has written or read, by id: they never change. The least recently used go first. */
export class PageCache {
  private readonly pages = new Map<string, ArchivePage>();
  constructor(private readonly maxEntries = 20_000) {}

  get(id: string): ArchivePage | undefined {
    const page = this.pages.get(id);
    if (page !== undefined) {
      this.pages.delete(id);
      this.pages.set(id, page);
    }
    return page;
  }

  set(page: ArchivePage): void {
    this.pages.delete(page.id);
    this.pages.set(page.id, page);
    while (this.pages.size > this.maxEntries) this.pages.delete(this.pages.keys().next().value as string);
  }
}
