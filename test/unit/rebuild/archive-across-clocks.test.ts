/**
 * The rebuild restores the archive of accepted commandIds the dedupe window still needs. A
 * command's time is its record's timestamp, stamped by whichever clock produced it; the
 * rebuild's cut-off is its own start, by its own clock. A rebuild whose clock is ahead of the
 * producer's must still keep what a re-send from that producer will be compared with.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { generate } from '../../../bench/account-log.ts';
import { benchDeps } from '../../../bench/rebuild-memory.ts';
import { MemoryHeadsStore } from '../../../functions/adapters/memory/heads-store.ts';
import type { LogRecord, PartitionOffsets } from '../../../functions/core/log.ts';
import { findInPages } from '../../../functions/heads/archive-pages.ts';
import { classify } from '../../../functions/heads/dedupe.ts';
import { rebuildAggregates } from '../../../functions/rebuild/rebuild-aggregates.ts';
import { retentionMs, topics } from '../../../functions/topology.ts';

afterEach(() => vi.useRealTimers());

const WINDOW = retentionMs(topics.commands.retention);
const MINUTE = 60_000;

/** One partition holding `messages`, read in one chunk. */
const eventLog = (messages: ReturnType<typeof generate>['messages']) => {
  const records: LogRecord[] = messages.map((m, offset) => ({
    partition: 0,
    offset,
    timestamp: 0,
    key: Buffer.from(m.key as string),
    value: Buffer.from(m.value as string),
  }));
  const end: PartitionOffsets = { 0: records.length };
  return {
    topic: 'events',
    offsets: () => Promise.resolve({ start: { 0: 0 }, end }),
    read: async (from: PartitionOffsets, to: PartitionOffsets, onChunk: (records: LogRecord[]) => Promise<'continue' | 'stop'>) => {
      await onChunk(records.slice(from[0] ?? 0, to[0] ?? 0));
    },
  };
};

describe('the rebuild’s archive across clocks that differ', () => {
  it('keeps a command a re-send within the window will be compared with, though the rebuild’s clock is minutes ahead', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    // 60 commands of one account, the first at `first` by the producer's clock (generate dates them an hour before "now").
    const first = Date.parse('2026-11-20T10:00:00.000Z');
    vi.setSystemTime(first + 3_600_000);
    const { messages } = generate(60, 1);
    // Seven days less a minute later, the rebuild runs on a machine whose clock is 3 minutes ahead.
    vi.setSystemTime(first + WINDOW - MINUTE + 3 * MINUTE);
    const heads = new MemoryHeadsStore('archive-across-clocks');
    expect(await rebuildAggregates(benchDeps(heads, eventLog(messages), 100))).toMatchObject({ status: 'complete', applied: 60 });

    // Then the producer sends the first command again, within the window by its clock.
    const [head] = (await heads.scanAll()).heads;
    const original = findInPages(await heads.readPages('account', 'bench-acc-000000', head?.pages ?? []), 'bench-cmd-0');
    expect(original).toMatchObject({ version: 1 });
    const resent = {
      record: { offset: 1_000, timestamp: first + WINDOW - 30_000 },
      envelope: { commandId: 'bench-cmd-0', aggregateType: 'account', aggregateId: 'bench-acc-000000' },
    };
    const memory = {
      recent: head?.recent ?? [],
      offsets: head?.offsets ?? {},
      archived: new Map([['bench-cmd-0', original!]]),
      dedupeWindowMs: WINDOW,
    };
    expect(classify(memory, resent, 'commands-0').kind).toBe('duplicate');
  });
});
