/**
 * A head as a stream, in the style of equinox's `Core.ts`: `load` gives the head with the
 * token of what was read, `trySync(token, next)` writes `next` only if the stored head is
 * still the one the token was read from. A lost race is not an error but a value: the winner's
 * head and its token (`resync`), against which the caller decides again. The stores
 * (adapters/dynamodb/aggregates-table.ts, adapters/memory/heads-store.ts) implement it, held
 * to one contract (test/contract/ports.ts).
 */
import type { Head } from './head.ts';

/**
 * What a write is conditional on: the head's key and the version stored when it was read (0:
 * none, or one that only remembers commands accepted without events). Made by the store's
 * `load` or, for heads read together in a batch, by `tokenOf`.
 */
export interface SyncToken {
  readonly key: string;
  readonly version: number;
}

/** A head as loaded (absent: the aggregate has no events), with the token to write after it. */
export interface Loaded {
  readonly head: Head | undefined;
  readonly token: SyncToken;
}

/** What `trySync` did: wrote (the new token), or lost to another writer (its head, to decide against again). */
export type Synced = { readonly outcome: 'written'; readonly token: SyncToken } | { readonly outcome: 'conflict'; readonly resync: Loaded };

/** A head store as the command side writes it: one head at a time, each write conditional on the read. */
export interface HeadStream {
  /** One head by consistent read, with its token. */
  load(key: string): Promise<Loaded>;
  /** Writes `next` if the stored head is still at the token's version; otherwise answers the winner's head. */
  trySync(token: SyncToken, next: Head): Promise<Synced>;
}

/** The token of a head read by key (in a batched read): conditional on its version, 0 when absent. */
export const tokenOf = (key: string, head: Head | undefined): SyncToken => ({ key, version: head?.version ?? 0 });

/** A head as loaded, with its token. */
export const loaded = (key: string, head: Head | undefined): Loaded => ({ head, token: tokenOf(key, head) });
