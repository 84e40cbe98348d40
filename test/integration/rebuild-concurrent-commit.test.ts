/**
 * The rebuild never lowers a head, even when no drain holds the command side (a CLI rebuild
 * while the system runs): a command batch that read the control item before the lock was
 * taken may commit between the rebuild's read of the fences and its write. Against the
 * emulator, with that commit made right after the rebuild's read: the rebuilt head is fenced
 * off by its own write's condition, and the newer head stays.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

describe('a command committed between the rebuild’s read of the fences and its write', () => {
  it('is not overwritten: the rebuilt head is fenced off and the version never goes back', async () => {
    const id = unique('acc');
    const now = await side.heads.getControl();
    expect(await side.heads.putControl({ status: 'rebuilding', epoch: 21, progress: null }, now)).toBe(true);
    await side.heads.trySync({ key: `account#${id}`, version: 0 }, head(id, 3, 30));

    // Right after the rebuild's BatchGetItem of the fences, a batch that read the control item
    // before the lock commits version 4.
    let committed = false;
    side.dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        if (!committed && context.commandName === 'BatchGetItemCommand') {
          committed = true;
          await side.heads.trySync({ key: `account#${id}`, version: 3 }, head(id, 4, 40));
        }
        return out;
      },
      { step: 'initialize', name: 'commitAfterFenceRead' },
    );
    try {
      const result = await side.heads.putRebuiltAll([head(id, 3, 30)], 21, 1);
      expect(committed).toBe(true);
      expect(result).toEqual({ written: 0, fencedOff: 1 });
    } finally {
      side.dynamo.middlewareStack.remove('commitAfterFenceRead');
    }
    expect(await side.heads.get('account', id)).toMatchObject({ version: 4, state: { balance: 40 } });
  });
});
