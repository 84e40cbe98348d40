/**
 * The control gate under two containers (or two invocations of one module, as a harness may
 * run them) deciding at once: neither may take a table for one behind its log
 * because of the other. The aggregates table is the in-memory one; its requests are real calls.
 */
import { describe, expect, it } from 'vitest';
import { MemoryHeadsStore } from '../../../functions/adapters/memory/heads-store.ts';
import { ControlGate } from '../../../functions/command/control-gate.ts';

const TP = 'commands-0';

describe('ControlGate', () => {
  it('takes a new table a sibling made ready and published to after this batch read it', async () => {
    const heads = new MemoryHeadsStore();
    let published = false;
    const eventLog = { isEmpty: () => Promise.resolve(!published) };
    const mine = new ControlGate({ heads, eventLog });
    const sibling = new ControlGate({ heads, eventLog });
    // Both read the table while it has no control item.
    const myRead = await heads.read([], [TP], mine.readsControl);
    const theirRead = await heads.read([], ['commands-1'], sibling.readsControl);
    // The sibling goes first: it makes the table ready, decides and publishes.
    expect((await sibling.check(theirRead, ['commands-1'], true)).fresh).toBe(true);
    published = true;
    const facts = await mine.check(myRead, [TP], true);
    expect(facts.control).toMatchObject({ status: 'ready', epoch: 0 });
    expect(facts.fresh).toBe(false);
  });

  it('still refuses a table without a control item under a log that holds events', async () => {
    const heads = new MemoryHeadsStore();
    const gate = new ControlGate({ heads, eventLog: { isEmpty: () => Promise.resolve(false) } });
    const read = await heads.read([], [TP], gate.readsControl);
    await expect(gate.check(read, [TP], true)).rejects.toMatchObject({ name: 'TableBehindLogError' });
  });

  it('reads the control item when the batch read went without it and a failure beside it forgot what was known', async () => {
    const heads = new MemoryHeadsStore();
    let published = false;
    const gate = new ControlGate({ heads, eventLog: { isEmpty: () => Promise.resolve(!published) } });
    await gate.check(await heads.read([], [TP], gate.readsControl), [TP], true);
    published = true;
    // Known: this batch reads without the control item (a new partition: no stamp yet) ...
    const withControl = gate.readsControl;
    expect(withControl).toBe(false);
    const read = await heads.read([], ['commands-1'], withControl);
    // ... and a batch failing beside it forgets before this one checks.
    gate.forget();
    const facts = await gate.check(read, ['commands-1'], withControl);
    expect(facts.control).toMatchObject({ status: 'ready', epoch: 0 });
    expect(facts.fresh).toBe(false);
  });
});
