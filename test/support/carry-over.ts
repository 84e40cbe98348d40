/**
 * The scenario of the carry-parks tests, over the in-memory park store (unit) or the emulator's
 * (integration): a command side that parked accounts b, c and d before its table's backup was
 * taken, then parked a, appended to b's sequence and lifted c's park.
 */
import type { MskRecord } from '../../functions/core/trigger-event.ts';
import type { ParkedAggregate } from '../../functions/park/parked.ts';
import type { ParkStore } from '../../functions/park/ports.ts';

/** The command of account `id` at `offset` of partition 0 of `commands`. */
export const parkedRecord = (id: string, offset: number): MskRecord => ({
  topic: 'commands',
  partition: 0,
  offset,
  timestamp: 1_000 + offset,
  key: Buffer.from(id).toString('base64'),
  value: Buffer.from(JSON.stringify({ commandId: `${id}-${offset}`, aggregateId: id })).toString('base64'),
});

/** Account `id` parked at `offset`, its sequence that one record. */
export const parkedOf = (id: string, offset: number): ParkedAggregate => ({
  side: 'command',
  aggregateType: 'account',
  aggregateId: id,
  topic: 'commands',
  partition: 0,
  incarnation: 1,
  cause: { code: 'DecideFailed', message: 'boom' },
  firstOffset: offset,
  lastOffset: offset,
  count: 1,
  done: 0,
  parkedAt: 1,
  status: 'parked',
});

/** Parks b, c and d in `park`, takes the `backup`, then parks a, appends to b and lifts c (the old table has a, b and d); returns the backup. */
export const parkAroundBackup = async <T>(park: ParkStore, backup: () => Promise<T> | T): Promise<T> => {
  for (const [id, offset] of [
    ['b', 1],
    ['c', 2],
    ['d', 3],
  ] as const)
    await park.park(parkedOf(id, offset), [parkedRecord(id, offset)]);
  const taken = await backup();
  await park.park(parkedOf('a', 4), [parkedRecord('a', 4)]);
  await park.append('account', 'b', [parkedRecord('b', 5)], { incarnation: 1 });
  await park.lift((await park.get('account', 'c')) as ParkedAggregate);
  return taken;
};
