/**
 * Warm heads: the heads a warm command function last read or wrote, so that the next batch
 * need not read them again (as Equinox keeps a stream's state with its etag). The entry is
 * never trusted on its own: the write that commits a decision is conditional on the version
 * the entry holds, so a stale entry costs one failed write (which returns the winner's head),
 * and a decision that writes nothing is checked against the table first (command/process-batch.ts).
 * Bounded by entries and by bytes as stored; the least recently used go first.
 */
import type { Head } from './head.ts';

/** How many heads, and how many bytes of them as stored, a warm function keeps. */
export interface HeadCacheLimits {
  readonly maxEntries: number;
  readonly maxBytes: number;
}

/** Default limits: 10,000 heads or 64 MiB, whichever comes first (the command function has 512 MB). */
export const DEFAULT_HEAD_CACHE: HeadCacheLimits = { maxEntries: 10_000, maxBytes: 64 * 1024 * 1024 };

/** Heads by aggregate key, least recently used first. */
export class HeadCache {
  private readonly entries = new Map<string, { readonly head: Head; readonly bytes: number }>();
  private bytes = 0;
  /** The control item's epoch the entries were kept under: a rebuild since makes them all unknown. */
  private epoch: number | undefined;

  constructor(private readonly limits: HeadCacheLimits = DEFAULT_HEAD_CACHE) {}

  /** The kept head of an aggregate, if any; it becomes the most recently used. */
  get(key: string): Head | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.head;
  }

  /** Keeps a head known to be the committed one (just read, or just written); `bytes` as stored. */
  set(key: string, head: Head, bytes: number): void {
    this.delete(key);
    if (this.limits.maxEntries <= 0 || bytes > this.limits.maxBytes) return;
    this.entries.set(key, { head, bytes });
    this.bytes += bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.entries.size <= this.limits.maxEntries && this.bytes <= this.limits.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.bytes;
    }
  }

  /** Forgets one head (a lost race, a failed write). */
  delete(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }

  /** Forgets every head (a failed batch, a table that is new or was rebuilt). */
  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }

  /** Keeps the entries only if the table's control epoch is still the one they were kept under; true when it is. */
  holdsEpoch(epoch: number): boolean {
    if (this.epoch === epoch) return true;
    this.clear();
    this.epoch = epoch;
    return false;
  }

  /** How many heads and bytes are kept. */
  get size(): { readonly entries: number; readonly bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }
}
