/**
 * The ports' contract: the behaviours the command side, the event side and the rebuilds
 * depend on, written once and held by both implementations: the in-memory adapters
 * (test/unit/adapters/memory-ports.test.ts) and the DynamoDB and Kafka ones
 * (test/integration/ports-contract.test.ts). The simulator is only as true as this suite.
 */
import { describe, expect, it } from 'vitest';
import { RebuildLockError } from '../../functions/control/control.ts';
import { emptyHead, type Head } from '../../functions/heads/head.ts';
import { findInPages, pageOf } from '../../functions/heads/archive-pages.ts';
import { aggregateKey } from '../../functions/core/aggregate.ts';
import type { StoredCheckpoint } from '../../functions/heads/partition.ts';
import { type CommandLog } from '../../functions/command/ports.ts';
import type { HeadsStore } from '../../functions/heads/ports.ts';
import type { Synced } from '../../functions/heads/stream.ts';
import type { LogReader, LogRecord } from '../../functions/core/log.ts';
import { RevisionConflictError, type ReadModels } from '../../functions/event/ports.ts';
import type { RebuildHeadsStore } from '../../functions/rebuild/ports.ts';
import type { Release } from '../../functions/core/release.ts';

/** What the suite is given: fresh stores and topics per call. */
export interface PortsFactory {
  /** `afterFenceRead`: runs once, right after the rebuild's read of the fences and before its writes. */
  heads(hooks?: { afterFenceRead?: () => Promise<void> }): Promise<HeadsStore & RebuildHeadsStore>;
  readModels(): Promise<ReadModels>;
  /** A fresh topic of `partitions`, read as a log; `produce` writes keyed messages, `recreate` deletes and creates it again. */
  topic(partitions: number): Promise<{
    readonly log: LogReader & { isEmpty(): Promise<boolean> };
    readonly commandLog: CommandLog;
    produce(messages: readonly { key: string; value: string }[]): Promise<void>;
    recreate(): Promise<void>;
  }>;
  /**
   * Fresh generations of a keyed topic (`<base>`, `<base>.g2`, …) of `partitions` each, read as
   * one log (core/generation-log.ts); `produce` writes keyed messages to generation `index`.
   */
  generations(partitions: readonly number[]): Promise<{
    readonly log: LogReader;
    readonly topics: readonly string[];
    produce(index: number, messages: readonly { key: string; value: string }[]): Promise<void>;
  }>;
  /** Records an operator release for a commands partition, as `kafka-aggregates skip` does. */
  addRelease(heads: HeadsStore, tp: string, release: Release): Promise<void>;
  /** A unique id. */
  unique(prefix: string): string;
}

const head = (id: string, version: number, balance = version): Head => ({
  ...emptyHead('account', id, null),
  version,
  state: { status: 'open', owner: 'Ann', balance },
  offsets: { 'commands-0': version },
});

/** Writes `h` over the stored head at `version`, as the command side does after reading it. */
const sync = (heads: HeadsStore, h: Head, version: number): Promise<Synced> =>
  heads.trySync({ key: `${h.aggregateType}#${h.aggregateId}`, version }, h);

const checkpoint = (tp: string, through: number, incarnation = 1): StoredCheckpoint => ({
  tp,
  incarnation,
  from: 0,
  through,
  fingerprint: `f${through}`,
});

const readAll = async (log: LogReader): Promise<LogRecord[]> => {
  const { start, end } = await log.offsets();
  const records: LogRecord[] = [];
  await log.read(start, end, (chunk) => {
    records.push(...chunk);
    return Promise.resolve('continue' as const);
  });
  return records.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
};

/** The contract, for one implementation. */
export const portsContract = (name: string, factory: PortsFactory): void => {
  describe(`${name}: the heads store`, () => {
    it('loads a head with its token and syncs on it; a lost race answers the winner and its token', async () => {
      const heads = await factory.heads();
      const id = factory.unique('acc');
      const key = `account#${id}`;
      const none = await heads.load(key);
      expect(none).toEqual({ head: undefined, token: { key, version: 0 } });
      expect(await heads.trySync(none.token, head(id, 1))).toEqual({ outcome: 'written', token: { key, version: 1 } });
      const lost = await heads.trySync(none.token, head(id, 1, 99));
      expect(lost).toMatchObject({
        outcome: 'conflict',
        resync: { head: { version: 1, state: { balance: 1 } }, token: { key, version: 1 } },
      });
      expect(await sync(heads, head(id, 3), 2)).toMatchObject({ outcome: 'conflict', resync: { token: { version: 1 } } });
      if (lost.outcome !== 'conflict') throw new Error('the race was not lost');
      expect(await heads.trySync(lost.resync.token, head(id, 2))).toEqual({ outcome: 'written', token: { key, version: 2 } });
      expect(await heads.load(key)).toMatchObject({ head: { version: 2, state: { balance: 2 } }, token: { key, version: 2 } });
      const read = await heads.read([key, `account#${factory.unique('none')}`], []);
      expect([...read.heads.values()].map((h) => h.version)).toEqual([2]);
    });

    it('syncs over a head at version 0 (one that only remembers commands accepted without events) as over none', async () => {
      const heads = await factory.heads();
      const id = factory.unique('acc');
      expect(await sync(heads, head(id, 0), 0)).toMatchObject({ outcome: 'written', token: { version: 0 } });
      expect(await sync(heads, { ...head(id, 0), recent: [] }, 0)).toMatchObject({ outcome: 'written' });
      expect(await sync(heads, head(id, 1), 0)).toMatchObject({ outcome: 'written' });
      expect(await sync(heads, head(id, 1, 9), 0)).toMatchObject({ outcome: 'conflict' });
      expect((await heads.load(`account#${id}`)).head).toMatchObject({ version: 1, state: { balance: 1 } });
    });

    it('puts a checkpoint only over the one it was derived from', async () => {
      const heads = await factory.heads();
      const tp = `${factory.unique('commands')}-0`;
      expect(await heads.putCheckpoint(checkpoint(tp, 4), undefined)).toBe(true);
      expect(await heads.putCheckpoint(checkpoint(tp, 5), undefined)).toBe(false);
      expect(await heads.putCheckpoint(checkpoint(tp, 6), checkpoint(tp, 3))).toBe(false);
      expect(await heads.putCheckpoint(checkpoint(tp, 6), checkpoint(tp, 4, 2))).toBe(false);
      expect(await heads.putCheckpoint(checkpoint(tp, 6), checkpoint(tp, 4))).toBe(true);
      expect(await heads.getCheckpoint(tp)).toMatchObject({ through: 6, fingerprint: 'f6' });
      expect((await heads.read([], [tp])).checkpoints.get(tp)).toMatchObject({ through: 6 });
      expect(await heads.putCheckpoint(checkpoint(tp, 2, 3), checkpoint(tp, 6))).toBe(true);
      expect(await heads.getCheckpoint(tp)).toMatchObject({ through: 2, incarnation: 3 });
    });

    it('puts the control item only over the status and epoch expected', async () => {
      const heads = await factory.heads();
      expect(await heads.getControl()).toBeUndefined();
      expect(await heads.putControl({ status: 'ready', epoch: 0 }, undefined)).toBe(true);
      expect(await heads.putControl({ status: 'ready', epoch: 0 }, undefined)).toBe(false);
      expect(await heads.putControl({ status: 'rebuilding', epoch: 1, progress: null }, { status: 'ready', epoch: 1 })).toBe(false);
      expect(await heads.putControl({ status: 'rebuilding', epoch: 1, progress: null }, { status: 'ready', epoch: 0 })).toBe(true);
      expect((await heads.read([], [])).control).toEqual({ status: 'rebuilding', epoch: 1, progress: null });
    });

    it('reads back archived commands, leaving out those never archived', async () => {
      const heads = await factory.heads();
      const id = factory.unique('acc');
      await heads.archive('account', id, [{ commandId: 'c1', version: 3, at: 1000 }], 60_000);
      const found = await heads.readArchive([
        { aggregateType: 'account', aggregateId: id, commandId: 'c1' },
        { aggregateType: 'account', aggregateId: id, commandId: 'c2' },
      ]);
      expect(found).toEqual([{ commandId: 'c1', version: 3, at: 1000 }]);
      await heads.keepResults(
        [
          {
            result: { commandId: 'c3', aggregateType: 'account', aggregateId: id, status: 'rejected', reason: { code: 'X', message: 'x' } },
            at: 1,
          },
        ],
        60_000,
      );
    });

    it('reads back archive pages, one by one or many per request, leaving out those never written', async () => {
      const heads = await factory.heads();
      const id = factory.unique('acc');
      const key = aggregateKey('account', id);
      const one = pageOf(key, [
        { commandId: 'c1', version: 3, at: 1000 },
        { commandId: 'c2', version: 0, at: 1001, rejected: { code: 'InsufficientFunds', message: 'not enough' } },
        { commandId: 'c2', version: 4, at: 1002 },
      ]);
      const two = pageOf(key, [{ commandId: 'c5', version: 9, at: 5000 }]);
      const never = pageOf(key, [{ commandId: 'c9', version: 1, at: 9000 }]);
      await heads.putPage('account', id, one, 60_000);
      await heads.putPages([{ aggregateType: 'account', aggregateId: id, page: two }], 60_000);
      const found = await heads.readPages('account', id, [one, two, never]);
      expect([...found].sort((a, b) => a.until - b.until)).toEqual([one, two]);
      // An acceptance of a commandId wins over its rejection; a commandId no page holds is not found.
      expect(findInPages(found, 'c2')).toEqual({ commandId: 'c2', version: 4, at: 1002 });
      expect(findInPages(found, 'c5')).toEqual({ commandId: 'c5', version: 9, at: 5000 });
      expect(findInPages(found, 'c9')).toBeUndefined();
    });

    it('writes rebuilt heads only under its lock, never lowering a version, and scans them back', async () => {
      const heads = await factory.heads();
      const [low, high] = [factory.unique('acc'), factory.unique('acc')];
      await expect(heads.putRebuiltAll([head(low, 1)], 1, 1)).rejects.toBeInstanceOf(RebuildLockError);
      expect(await heads.putControl({ status: 'rebuilding', epoch: 1, progress: null }, undefined)).toBe(true);
      await sync(heads, head(high, 5), 0);
      expect(await heads.putRebuiltAll([head(low, 1), head(high, 4)], 1, 1)).toEqual({ written: 1, fencedOff: 1 });
      expect([...(await heads.readRebuilt([`account#${low}`, `account#${high}`], 1)).keys()]).toEqual([`account#${low}`]);
      // A resumed rebuild goes on from the head that fenced it off: read whoever wrote it.
      expect([...(await heads.readRebuilt([`account#${low}`, `account#${high}`])).keys()].sort()).toEqual(
        [`account#${low}`, `account#${high}`].sort(),
      );
      const scanned = await heads.scanAll();
      expect(scanned.heads.map((h) => [h.aggregateId, h.version]).sort()).toEqual(
        [
          [high, 5],
          [low, 1],
        ].sort(),
      );
      // The highest epoch a rebuilt head carries: a rebuild over a copy passes it (rebuild-aggregates.ts).
      expect(scanned.rebuildEpoch).toBe(1);
    });
    it('reads releases back with the batch, each with the incarnation it was recorded in', async () => {
      const heads = await factory.heads();
      const tp = `${factory.unique('commands')}-0`;
      const release = (from: number, incarnation: number): Release => ({
        action: 'skip',
        from,
        to: from,
        reason: 'r',
        by: 'op',
        at: '2026-01-01T00:00:00.000Z',
        incarnation,
      });
      await factory.addRelease(heads, tp, release(3, 1));
      await factory.addRelease(heads, tp, release(3, 2));
      expect((await heads.read([], [tp])).releases.get(tp)).toEqual([release(3, 1), release(3, 2)]);
    });

    it("keeps a partition's releases across its checkpoint's writes, before and after the first", async () => {
      const heads = await factory.heads();
      const tp = `${factory.unique('commands')}-0`;
      const skip = (from: number): Release => ({ action: 'skip', from, to: from, reason: 'r', by: 'op', at: '2026-01-01T00:00:00.000Z' });
      await factory.addRelease(heads, tp, skip(3));
      expect((await heads.read([], [tp])).checkpoints.get(tp)).toBeUndefined();
      expect(await heads.getCheckpoint(tp)).toBeUndefined();
      expect(await heads.putCheckpoint({ ...checkpoint(tp, 4), anchor: { offset: 0, fingerprint: 'a' } }, undefined)).toBe(true);
      await factory.addRelease(heads, tp, skip(5));
      expect(await heads.putCheckpoint(checkpoint(tp, 6), checkpoint(tp, 4))).toBe(true);
      expect(await heads.putCheckpoint(checkpoint(tp, 2, 3), checkpoint(tp, 6))).toBe(true);
      const read = await heads.read([], [tp]);
      expect(read.releases.get(tp)).toEqual([skip(3), skip(5)]);
      expect(read.checkpoints.get(tp)).toStrictEqual(checkpoint(tp, 2, 3));
    });

    it('fences off a rebuilt head when a commit lands between the read of the fences and the write', async () => {
      const id = factory.unique('acc');
      let committed = false;
      const heads: HeadsStore & RebuildHeadsStore = await factory.heads({
        afterFenceRead: async () => {
          committed = true;
          await sync(heads, head(id, 4, 40), 3);
        },
      });
      expect(await heads.putControl({ status: 'rebuilding', epoch: 2, progress: null }, undefined)).toBe(true);
      await sync(heads, head(id, 3, 30), 0);
      expect(await heads.putRebuiltAll([head(id, 3, 30)], 2, 1)).toEqual({ written: 0, fencedOff: 1 });
      expect(committed).toBe(true);
      expect((await heads.read([`account#${id}`], [])).heads.get(`account#${id}`)).toMatchObject({ version: 4, state: { balance: 40 } });
    });
  });

  describe(`${name}: the read models`, () => {
    it('writes an item on its revision, and a lost race carries the winner', async () => {
      const models = await factory.readModels();
      const key = { pk: 'account-summary', sk: factory.unique('acc') };
      await models.write(key, { data: { n: 1 }, versions: { a: 1 }, gaps: [], gapCount: 0 }, 0);
      const lost = await models.write(key, { data: { n: 2 }, versions: { a: 2 }, gaps: [], gapCount: 0 }, 0).catch((e: unknown) => e);
      expect(lost).toBeInstanceOf(RevisionConflictError);
      expect((lost as RevisionConflictError).current).toMatchObject({ data: { n: 1 }, revision: 1 });
      await models.write(key, { data: { n: 2 }, versions: { a: 2 }, gaps: [], gapCount: 0 }, 1);
      expect((await models.readBatch([key], ['events-0'])).items.size).toBe(1);
      expect(await models.get(key)).toMatchObject({ data: { n: 2 }, revision: 2 });
    });

    it('puts the control item on its revision', async () => {
      const models = await factory.readModels();
      expect(await models.putControl('ready', 0)).toEqual({ status: 'ready', revision: 1 });
      await expect(models.putControl('rebuilding', 0)).rejects.toThrow();
      expect(await models.putControl('rebuilding', 1)).toEqual({ status: 'rebuilding', revision: 2 });
      expect(await models.getControl()).toEqual({ status: 'rebuilding', revision: 2 });
    });
  });

  describe(`${name}: a topic read as a log`, () => {
    it('gives offsets from 0, reads ranges back in order, samples by bounds, and starts again at 0 when recreated', async () => {
      const topic = await factory.topic(1);
      expect(await topic.log.isEmpty()).toBe(true);
      await topic.produce(['a', 'b', 'c', 'd'].map((value) => ({ key: 'k', value })));
      expect(await topic.log.offsets()).toEqual({ start: { 0: 0 }, end: { 0: 4 } });
      expect((await readAll(topic.log)).map((r) => [r.offset, r.value?.toString('utf8')])).toEqual([
        [0, 'a'],
        [1, 'b'],
        [2, 'c'],
        [3, 'd'],
      ]);
      expect(await topic.commandLog.bounds(topic.log.topic, 0)).toEqual({ start: 0, end: 4 });
      expect((await topic.commandLog.sample(topic.log.topic, 0, 1, 9, 2)).map((r) => r.offset)).toEqual([1, 2]);
      await topic.recreate();
      expect(await topic.log.isEmpty()).toBe(true);
      await topic.produce([{ key: 'k', value: 'e' }]);
      expect((await readAll(topic.log)).map((r) => [r.offset, r.value?.toString('utf8')])).toEqual([[0, 'e']]);
    });

    it('reads every generation of a topic, each to its end before the next, with positions that resume on either', async () => {
      const generations = await factory.generations([2, 4]);
      const { log, topics } = generations;
      const [first, second] = topics as [string, string];
      const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
      await generations.produce(
        0,
        keys.map((key) => ({ key, value: `${key}1` })),
      );
      await generations.produce(
        1,
        keys.map((key) => ({ key, value: `${key}2` })),
      );
      const { start, end } = await log.offsets();
      // The first generation keeps its partition numbers; a later one's are named by its topic.
      expect(Object.keys(end).sort()).toEqual(['0', '1', `${second}-0`, `${second}-1`, `${second}-2`, `${second}-3`].sort());
      expect(Object.values(end).reduce((n, o) => n + o, 0)).toBe(12);
      const read: LogRecord[] = [];
      await log.read(start, end, (chunk) => {
        read.push(...chunk);
        return Promise.resolve('continue' as const);
      });
      expect(read.map((r) => r.value?.toString('utf8').at(-1))).toEqual([...keys.map(() => '1'), ...keys.map(() => '2')]);
      expect(new Set(read.slice(0, 6).map((r) => r.topic ?? first))).toEqual(new Set([first]));
      expect(new Set(read.slice(6).map((r) => r.topic))).toEqual(new Set([second]));
      // Stopped in the first generation: nothing of the second is read.
      let chunks = 0;
      await log.read(start, end, () => {
        chunks++;
        return Promise.resolve('stop' as const);
      });
      expect(chunks).toBe(1);
      // From a position past the first generation's end: only the second's records.
      const rest: LogRecord[] = [];
      await log.read(
        {
          ...end,
          ...Object.fromEntries(
            Object.keys(end)
              .filter((k) => k.startsWith(second))
              .map((k) => [k, 0]),
          ),
        },
        end,
        (chunk) => {
          rest.push(...chunk);
          return Promise.resolve('continue' as const);
        },
      );
      expect(rest.map((r) => r.value?.toString('utf8')).sort()).toEqual(keys.map((k) => `${k}2`));
    });
  });
};
