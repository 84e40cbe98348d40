/**
 * The rebuild's output, byte for byte, over the rebuild benchmark's generated log (seeded, its
 * times fixed here): every item it leaves in the table (heads as stored, archive pages, their
 * commands' fingerprints) and what the fold hands each checkpoint. The digests were taken with
 * the fold before it was made faster (main at badd2e0); a change to how the fold or the
 * checkpoint works that changes any head, page or archived command fails here.
 */
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { generate } from '../../../bench/account-log.ts';
import { benchDeps } from '../../../bench/rebuild-memory.ts';
import { MemoryHeadsStore } from '../../../functions/adapters/memory/heads-store.ts';
import { CONTROL } from '../../../functions/adapters/memory/heads-items.ts';
import type { LogRecord, PartitionOffsets } from '../../../functions/core/log.ts';
import { registry } from '../../../functions/core/registry.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { LogFold, readLogRecord } from '../../../functions/rebuild/fold.ts';
import { rebuildAggregates } from '../../../functions/rebuild/rebuild-aggregates.ts';
import { verifyAggregates } from '../../../functions/rebuild/verify-aggregates.ts';
import { retentionMs, topics } from '../../../functions/topology.ts';

const NOW = Date.parse('2026-12-02T10:00:00.000Z');
const PARTITIONS = 3;

/** The benchmark's log on three partitions by account, read in chunks of `chunk` records. */
const eventLog = (events: number, accounts: number, chunk: number) => {
  const { messages } = generate(events, accounts);
  const parts: LogRecord[][] = Array.from({ length: PARTITIONS }, () => []);
  for (const m of messages) {
    const partition = Number((m.key as string).slice(-6)) % PARTITIONS;
    const records = parts[partition] as LogRecord[];
    records.push({
      partition,
      offset: records.length,
      timestamp: 0,
      key: Buffer.from(m.key as string),
      value: Buffer.from(m.value as string),
    });
  }
  const ends: PartitionOffsets = Object.fromEntries(parts.map((r, p) => [p, r.length]));
  return {
    topic: 'events',
    records: parts.flat(),
    offsets: () => Promise.resolve({ start: Object.fromEntries(parts.map((_, p) => [p, 0])), end: ends }),
    read: async (from: PartitionOffsets, to: PartitionOffsets, onChunk: (records: LogRecord[]) => Promise<'continue' | 'stop'>) => {
      for (const [p, records] of parts.entries())
        for (let i = from[p] ?? 0; i < (to[p] ?? 0); i += chunk)
          if ((await onChunk(records.slice(i, Math.min(i + chunk, to[p] ?? 0)))) === 'stop') return;
    },
  };
};

const digest = (values: Iterable<unknown>): string => {
  const hash = createHash('sha256');
  for (const value of values) hash.update(`${JSON.stringify(value)}\n`);
  return hash.digest('hex').slice(0, 16);
};

describe('the rebuild over the benchmark log', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(NOW);
  });
  afterEach(() => vi.useRealTimers());

  it('writes the same items as before: heads, archive pages and their fingerprints', async () => {
    const log = eventLog(12_000, 120, 1_000);
    const heads = new MemoryHeadsStore('same-heads');
    const report = await rebuildAggregates(benchDeps(heads, log, 2_500));
    expect(report).toMatchObject({ status: 'complete', applied: 12_000, headsWritten: 240, fencedOff: 0, archived: 7_200 });
    const items = [...heads.dump()].filter(([key]) => key !== CONTROL).sort(([a], [b]) => a.localeCompare(b));
    expect(items).toHaveLength(120 + 200);
    expect(digest(items)).toBe('66c2e43ead408246');
    expect((await verifyAggregates({ aggregates, heads, eventLog: log })).differences).toStrictEqual([]);
  });

  it('hands each checkpoint the same heads, pages and archived commands as before', () => {
    const log = eventLog(12_000, 120, 1_000);
    const known = registry(aggregates);
    const fold = new LogFold(known, NOW - retentionMs(topics.commands.retention));
    const taken = [];
    for (const [i, record] of log.records.entries()) {
      fold.applyRead(readLogRecord('events', record, known));
      if (i % 2_500 === 2_499) taken.push(...fold.takeDirty());
    }
    fold.finish();
    taken.push(...fold.takeDirty());
    expect(taken).toHaveLength(280);
    expect(digest(taken)).toBe('db4d36e28cede624');
    expect(digest(fold.all())).toBe('b3fefae5dce720aa');
  });
});
