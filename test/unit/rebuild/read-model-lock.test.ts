import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { READ_MODEL_LOCK_KEY, ReadModelRebuildLockError, takeReadModelLock } from '../../../functions/rebuild/read-model-lock.ts';

afterEach(() => vi.useRealTimers());

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

  it('lets a new run in once a crashed holder’s lease has ended: its deadline and a minute, or 15 minutes without one', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const table = new MemoryReadModels();
    await takeReadModelLock(table, 'crashed', Date.now() + 5 * 60_000); // never released
    vi.setSystemTime(Date.now() + 5 * 60_000 + 59_000);
    await expect(takeReadModelLock(table, 'early')).rejects.toBeInstanceOf(ReadModelRebuildLockError);
    vi.setSystemTime(Date.now() + 2_000);
    await takeReadModelLock(table, 'local'); // no deadline, never released
    vi.setSystemTime(Date.now() + 14 * 60_000);
    await expect(takeReadModelLock(table, 'early')).rejects.toBeInstanceOf(ReadModelRebuildLockError);
    vi.setSystemTime(Date.now() + 60_001);
    expect(await takeReadModelLock(table, 'after')).toBeDefined();
  });

  it('renews the lease of a run without a deadline at each checkpoint, and stops a run whose lock was taken over', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const table = new MemoryReadModels();
    const slow = await takeReadModelLock(table, 'slow');
    vi.setSystemTime(Date.now() + 10 * 60_000);
    await slow.renew();
    vi.setSystemTime(Date.now() + 10 * 60_000);
    await expect(takeReadModelLock(table, 'other')).rejects.toBeInstanceOf(ReadModelRebuildLockError);
    vi.setSystemTime(Date.now() + 6 * 60_000);
    const other = await takeReadModelLock(table, 'other');
    await expect(slow.renew()).rejects.toThrow(/taken by another run after its lease ended: slow stops/);
    // The one that stopped leaves the new holder's lock alone.
    await slow.release();
    expect((await table.get(READ_MODEL_LOCK_KEY))?.data).toMatchObject({ holder: 'other' });
    await other.release();
    expect((await table.get(READ_MODEL_LOCK_KEY))?.data).toMatchObject({ until: 0 });
  });
});
