import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import {
  CLOCK_MARGIN_MS,
  READ_MODEL_LOCK_KEY,
  ReadModelRebuildLockError,
  takeReadModelLock,
} from '../../../functions/rebuild/read-model-lock.ts';

afterEach(() => vi.useRealTimers());

const MINUTE = 60_000;

describe('the read-model rebuilds’ lock', () => {
  it('refuses a second holder while the first holds it, and lets the next in once released', async () => {
    const table = new MemoryReadModels();
    const first = await takeReadModelLock(table, 'read-models');
    const refused = await takeReadModelLock(table, 'account-summary').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ReadModelRebuildLockError);
    expect(refused).toMatchObject({ holder: 'read-models' });
    await first.release();
    const next = await takeReadModelLock(table, 'account-summary');
    await next.release();
  });

  it('lets a new run in once a crashed holder’s lease has ended and the clock margin passed: its deadline and a minute, or 15 minutes without one', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const table = new MemoryReadModels();
    await takeReadModelLock(table, 'crashed', Date.now() + 5 * MINUTE); // never released
    vi.setSystemTime(Date.now() + 6 * MINUTE + CLOCK_MARGIN_MS - 1_000);
    await expect(takeReadModelLock(table, 'early')).rejects.toBeInstanceOf(ReadModelRebuildLockError);
    vi.setSystemTime(Date.now() + 2_000);
    await takeReadModelLock(table, 'local'); // no deadline, never released
    vi.setSystemTime(Date.now() + 15 * MINUTE + CLOCK_MARGIN_MS - 1_000);
    await expect(takeReadModelLock(table, 'early')).rejects.toBeInstanceOf(ReadModelRebuildLockError);
    vi.setSystemTime(Date.now() + 2_000);
    expect(await takeReadModelLock(table, 'after')).toBeDefined();
  });

  it('renews the lease of a run without a deadline at each checkpoint, and stops a run whose lock was taken over', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const table = new MemoryReadModels();
    const slow = await takeReadModelLock(table, 'slow');
    vi.setSystemTime(Date.now() + 10 * MINUTE);
    await slow.renew();
    vi.setSystemTime(Date.now() + 10 * MINUTE);
    await expect(takeReadModelLock(table, 'other')).rejects.toBeInstanceOf(ReadModelRebuildLockError);
    vi.setSystemTime(Date.now() + 6 * MINUTE + CLOCK_MARGIN_MS);
    const other = await takeReadModelLock(table, 'other');
    await expect(slow.renew()).rejects.toThrow(/taken by another run after its lease ended: slow stops/);
    // The one that stopped leaves the new holder's lock alone.
    await slow.release();
    expect((await table.get(READ_MODEL_LOCK_KEY))?.data).toMatchObject({ holder: 'other' });
    await other.release();
    expect((await table.get(READ_MODEL_LOCK_KEY))?.data).toMatchObject({ until: 0 });
  });
});

/**
 * Two machines whose clocks differ: the system time is set to the clock of the machine that
 * acts (fake timers), `real` is the time they would both read with clocks that agree.
 */
describe('the read-model rebuilds’ lock across clocks that differ', () => {
  const start = 1_000_000_000;
  const on = (real: number, skewMs: number) => vi.setSystemTime(real + skewMs);

  it('refuses a laptop minutes ahead of a Lambda function that still holds the lock, and says why', async () => {
    vi.useFakeTimers({ now: start });
    const table = new MemoryReadModels();
    // The function (a clock that is right) runs to its deadline, 14 minutes on.
    on(start, 0);
    const lambda = await takeReadModelLock(table, 'read-models', start + 14 * MINUTE);
    // 13 minutes on, the function still running, an operator's laptop 3 minutes ahead asks.
    on(start + 13 * MINUTE, 3 * MINUTE);
    const refused = await takeReadModelLock(table, 'account-summary').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ReadModelRebuildLockError);
    expect((refused as Error).message).toMatch(
      /takes it over only 5 minutes after that \(the difference allowed between machines' clocks\)/,
    );
    on(start + 13 * MINUTE, 0);
    await lambda.renew();
    await lambda.release();
  });

  it('refuses a Lambda function while a laptop minutes behind it holds an open lease', async () => {
    vi.useFakeTimers({ now: start });
    const table = new MemoryReadModels();
    // The laptop, 4 minutes behind, takes the lock without a deadline: 15 minutes by its clock.
    on(start, -4 * MINUTE);
    await takeReadModelLock(table, 'account-summary');
    // 12 minutes on (no checkpoint since: a slow first one), the function asks: by its clock the lease ended a minute ago.
    on(start + 12 * MINUTE, 0);
    await expect(takeReadModelLock(table, 'read-models')).rejects.toBeInstanceOf(ReadModelRebuildLockError);
  });

  it('stops a holder with a deadline at its next checkpoint once a run whose clock is beyond the margin took the lock over', async () => {
    vi.useFakeTimers({ now: start });
    const table = new MemoryReadModels();
    on(start, 0);
    const lambda = await takeReadModelLock(table, 'read-models', start + 14 * MINUTE);
    on(start + MINUTE, 0);
    await lambda.renew();
    // A laptop 20 minutes ahead, past what the lock allows, takes it over while the function runs.
    on(start + 2 * MINUTE, 20 * MINUTE);
    const laptop = await takeReadModelLock(table, 'account-summary');
    // The function learns it at its next checkpoint, and stops there; the laptop's lock stands.
    on(start + 3 * MINUTE, 0);
    await expect(lambda.renew()).rejects.toThrow(/taken by another run after its lease ended: read-models stops/);
    await lambda.release();
    expect((await table.get(READ_MODEL_LOCK_KEY))?.data).toMatchObject({ holder: 'account-summary' });
    await laptop.release();
  });
});
