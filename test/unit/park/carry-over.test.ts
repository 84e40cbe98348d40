/**
 * `kafka-aggregates carry-parks` (park/carry-over.ts): the old table's parks carried over into the
 * table restored from it, as docs/OPERATIONS.md's step 3 says: copied, copied over, removed;
 * idempotent, whole after a crash anywhere, and refused (writing nothing) for the wrong tables.
 */
import { describe, expect, it } from 'vitest';
import { MemoryHeadsStore } from '../../../functions/adapters/memory/heads-store.ts';
import type { Fate } from '../../../functions/adapters/memory/interleave.ts';
import { MemoryParkStore } from '../../../functions/adapters/memory/park-store.ts';
import { carryParksOver, CarryOverRefusedError } from '../../../functions/park/carry-over.ts';
import { parkAroundBackup } from '../../support/carry-over.ts';

/** What a park store holds that the command side reads: index, parked aggregates, sequences. */
const held = (store: MemoryParkStore) => {
  const { index, parked, records } = store.dump();
  return { index, parked, records: new Map([...records].filter(([key]) => parked.has(key))) };
};

/**
 * The old table, live (its control item names it), and one restored from its backup: the backup
 * had parks b (changed since), c (released since) and d; the old table has a (parked since), b and d.
 */
const tables = async (restoredIo?: { point(op: string): Promise<Fate> }) => {
  const oldHeads = new MemoryHeadsStore('aggregates-old');
  await oldHeads.putControl({ status: 'ready', epoch: 1, table: await oldHeads.identity() }, undefined);
  const oldPark = new MemoryParkStore();
  const backup = await parkAroundBackup(oldPark, () => ({ heads: oldHeads.dump(), park: oldPark.dump() }));

  const heads = new MemoryHeadsStore('aggregates-restored');
  heads.restore(backup.heads);
  const restored = new MemoryParkStore(restoredIo);
  restored.restore(backup.park);
  return { from: { heads: oldHeads, park: oldPark }, to: { heads, park: restored } };
};

describe('carrying parks over a table restore', () => {
  it('copies the parks made since the backup, copies over those changed, removes those lifted; a second run finds nothing to do', async () => {
    const deps = await tables();
    expect(await carryParksOver(deps)).toMatchObject({
      copied: ['account#a'],
      replaced: ['account#b'],
      removed: ['account#c'],
      unchanged: ['account#d'],
      skipped: [],
    });
    expect(held(deps.to.park)).toEqual(held(deps.from.park));
    expect(await carryParksOver(deps)).toMatchObject({
      copied: [],
      replaced: [],
      removed: [],
      unchanged: ['account#a', 'account#b', 'account#d'],
    });
  });

  it('a dry run says the same and writes nothing', async () => {
    const deps = await tables();
    const before = held(deps.to.park);
    expect(await carryParksOver(deps, { dryRun: true })).toMatchObject({
      copied: ['account#a'],
      replaced: ['account#b'],
      removed: ['account#c'],
      dryRun: true,
    });
    expect(held(deps.to.park)).toEqual(before);
  });

  it('a run that crashed at any request of the restored table is run again and ends the same', async () => {
    for (let at = 1; ; at++) {
      let requests = 0;
      const crash: { point(op: string): Promise<Fate> } = {
        // A timeout before or after the request took effect, then the run ends there.
        point: () => Promise.resolve(++requests === at ? (at % 2 === 0 ? 'fail-after' : 'fail-before') : 'ok'),
      };
      const deps = await tables(crash);
      const first = await carryParksOver(deps).then(
        () => 'done',
        () => 'crashed',
      );
      requests = -Infinity;
      await carryParksOver(deps);
      expect(held(deps.to.park), `crashed at request ${at}`).toEqual(held(deps.from.park));
      if (first === 'done') break;
    }
  });

  it('an index entry without its aggregate (a lift cut short) is skipped, and the restored table’s park of it removed', async () => {
    const deps = await tables();
    deps.from.park.parked.delete('account#d');
    const report = await carryParksOver(deps);
    expect(report.skipped).toEqual([{ key: 'account#d', why: expect.stringContaining('a lift under way or cut short') as string }]);
    expect(report.removed).toEqual(['account#c', 'account#d']);
    expect(await deps.to.park.get('account', 'd')).toBeUndefined();
  });

  describe('refuses the wrong tables, writing nothing', () => {
    const refused = async (change: (deps: Awaited<ReturnType<typeof tables>>) => Promise<unknown> | void, message: RegExp) => {
      const deps = await tables();
      await change(deps);
      const before = held(deps.to.park);
      await expect(carryParksOver(deps)).rejects.toThrow(CarryOverRefusedError);
      await expect(carryParksOver(deps)).rejects.toThrow(message);
      expect(held(deps.to.park)).toEqual(before);
    };

    it('one table for both', () => refused((deps) => void Object.assign(deps.from, deps.to), /the table to carry the parks into/));

    it('an old table the command side never ran on', () =>
      refused((deps) => {
        deps.from.heads = new MemoryHeadsStore('aggregates-old');
      }, /has no control item/));

    it('the tables the wrong way round', () =>
      refused((deps) => {
        [deps.from, deps.to] = [deps.to, deps.from];
      }, /the wrong way round/));

    it('a restored table rebuilt since', () =>
      refused(async (deps) => {
        const control = await deps.to.heads.getControl();
        await deps.to.heads.putControl({ status: 'ready', epoch: 2, table: await deps.to.heads.identity() }, control);
      }, /is live/));

    it('a restored table being rebuilt', () =>
      refused(async (deps) => {
        const control = await deps.to.heads.getControl();
        await deps.to.heads.putControl({ status: 'rebuilding', epoch: 2, progress: null }, control);
      }, /is being rebuilt/));

    it('a table restored from another one', () =>
      refused(async (deps) => {
        const control = await deps.to.heads.getControl();
        await deps.to.heads.putControl({ status: 'ready', epoch: 1, table: 'elsewhere#1' }, control);
      }, /restored or copied from another table \(elsewhere#1\)/));
  });
});
