/**
 * The rebuild's batched head writes against the emulator: written only while the control item
 * holds this rebuild's lock, never over a newer rebuild's head, never lowering a version, and
 * taken from the heads when called (the fold goes on changing them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RebuildLockError } from '../../functions/control/control.ts';
import { openAccountHead, startCommandSide, type CommandSide } from '../support/command-side.ts';
import { unique } from '../support/kafka.ts';

let side: CommandSide;
beforeAll(async () => {
  side = await startCommandSide();
});
afterAll(async () => {
  await side.close();
});

const head = openAccountHead;

/** Sets the control item to `next`, whatever it was. */
const control = async (next: Parameters<CommandSide['heads']['putControl']>[0]) => {
  const now = await side.heads.getControl();
  expect(await side.heads.putControl(next, now)).toBe(true);
};

describe("the rebuild's batched head writes", () => {
  it("write more than one group of heads, each once, while the lock is this rebuild's", async () => {
    await control({ status: 'rebuilding', epoch: 7, progress: null });
    const heads = Array.from({ length: 150 }, (_, i) => head(unique(`acc${i}`), 3, i));
    expect(await side.heads.putRebuiltAll(heads, 7, 2)).toEqual({ written: 150, fencedOff: 0 });
    expect((await side.heads.get('account', heads[149]?.aggregateId as string))?.state).toEqual({
      status: 'open',
      owner: 'Ann',
      balance: 149,
    });
  });

  it('write nothing once the lock is released or taken by a newer rebuild', async () => {
    const id = unique('acc');
    await control({ status: 'rebuilding', epoch: 8, progress: null });
    await expect(side.heads.putRebuiltAll([head(id, 1, 5)], 7, 1)).rejects.toBeInstanceOf(RebuildLockError);
    await control({ status: 'ready', epoch: 8 });
    await expect(side.heads.putRebuiltAll([head(id, 1, 5)], 8, 1)).rejects.toBeInstanceOf(RebuildLockError);
    expect(await side.heads.get('account', id)).toBeUndefined();
  });

  it('leave a head stored at a higher version or by a newer rebuild as it is', async () => {
    const [higher, newer, plain] = [unique('acc'), unique('acc'), unique('acc')];
    await control({ status: 'rebuilding', epoch: 10, progress: null });
    await side.heads.trySync({ key: `account#${higher}`, version: 0 }, head(higher, 4, 40));
    expect(await side.heads.putRebuiltAll([head(newer, 2, 20)], 10, 1)).toEqual({ written: 1, fencedOff: 0 });
    await control({ status: 'rebuilding', epoch: 9, progress: null });
    expect(await side.heads.putRebuiltAll([head(higher, 3, 30), head(newer, 2, 99), head(plain, 1, 10)], 9, 1)).toEqual({
      written: 1,
      fencedOff: 2,
    });
    expect([(await side.heads.get('account', higher))?.version, (await side.heads.get('account', newer))?.state]).toEqual([
      4,
      { status: 'open', owner: 'Ann', balance: 20 },
    ]);
    expect((await side.heads.get('account', plain))?.version).toBe(1);
  });

  it('write the heads as they were when called, though they change after', async () => {
    const id = unique('acc');
    await control({ status: 'rebuilding', epoch: 11, progress: null });
    const h = { ...head(id, 1, 1), offsets: { 'commands-0': 1 } as Record<string, number> };
    const writing = side.heads.putRebuiltAll([h], 11, 1);
    h.offsets['commands-0'] = 99;
    await writing;
    expect((await side.heads.get('account', id))?.offsets).toEqual({ 'commands-0': 1 });
  });
});
