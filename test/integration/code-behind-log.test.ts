/**
 * Code older than the log halts instead of skipping: an event at its type's current revision
 * whose data the running code's schema refuses (newer code added an optional field that this
 * stricter schema does not allow) is a fault of the code, as an unknown revision is. Through
 * the real event side (its read-models table in the emulator) and the snapshot rebuild (its
 * events topic on the broker): the event side halts that partition at the record and
 * dead-letters nothing, the rebuild stops with EventChainError and writes no head past it. A
 * malformed envelope is still bad input, dead-lettered.
 */
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventChainError } from '../../functions/core/event-reader.ts';
import type { EventRecord } from '../../functions/core/wire.ts';
import { getAccountSummary } from '../../functions/projections/account-summary-query.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { rebuildDeps, startCommandSide, type CommandSide } from '../support/command-side.ts';
import { startEventSide, type EventSide } from '../support/event-side.ts';
import { accountEventRecord } from '../support/events.ts';
import { unique } from '../support/kafka.ts';
import { mskEvent } from '../support/msk.ts';

let side: EventSide;
let commandSide: CommandSide;
let producer: Producer;

beforeAll(async () => {
  [side, commandSide] = await Promise.all([startEventSide(), startCommandSide()]);
  producer = commandSide.kafka.producer();
  await producer.connect();
});
afterAll(async () => {
  await producer.disconnect();
  await Promise.all([side.close(), commandSide.close()]);
});

const opened = (id: string) => accountEventRecord(id, 1, 'AccountOpened', { owner: 'Ada' });
const deposited = (id: string, version: number, amount: number) =>
  ({ ...accountEventRecord(id, version, 'MoneyDeposited', { amount, currency: 'EUR' }), revision: 2 }) as EventRecord;
/** A withdrawal as newer code writes it, at the same revision: with an optional field the running code's strict schema refuses. */
const withdrawnWithNote = (id: string, version: number, amount: number) =>
  accountEventRecord(id, version, 'MoneyWithdrawn', { amount, note: 'rent' });

describe('an event at the current revision that the running schema refuses', () => {
  it('halts its partition on the event side, dead-letters nothing, and the other partition goes on', async () => {
    const [a, b] = [unique('acc'), unique('acc')];
    const topic = unique('events');
    const summary = await side.processor()(
      mskEvent([
        { topic, partition: 0, offset: 0, key: a, value: opened(a) },
        { topic, partition: 0, offset: 1, key: a, value: deposited(a, 2, 100) },
        { topic, partition: 0, offset: 2, key: a, value: withdrawnWithNote(a, 3, 40) },
        { topic, partition: 0, offset: 3, key: a, value: deposited(a, 4, 5) },
        { topic, partition: 1, offset: 0, key: b, value: opened(b) },
      ]),
    );

    expect(summary.halted).toEqual([
      {
        cause: 'unreadable',
        position: { topic, partition: 0, offset: 2 },
        fault: expect.objectContaining({ code: 'SchemaRefused' }) as unknown,
      },
    ]);
    expect(summary.deadLettered).toBe(0);
    expect(await getAccountSummary(side.readModels, a)).toMatchObject({ version: 2, balance: 100 });
    expect(await getAccountSummary(side.readModels, b)).toMatchObject({ version: 1 });
    expect((await side.deadLetters()).filter((d) => d.source.topic === topic)).toEqual([]);
  });

  it('stops the snapshot rebuild with EventChainError instead of completing with a gap', async () => {
    const a = unique('acc');
    const events = [opened(a), deposited(a, 2, 100), withdrawnWithNote(a, 3, 40), deposited(a, 4, 5)];
    await producer.send({
      topic: commandSide.topics.events,
      messages: events.map((e) => ({ partition: 0, key: e.aggregateId, value: JSON.stringify(e) })),
    });

    const error = await rebuildAggregates(rebuildDeps(commandSide)).then(
      (report) => report,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(EventChainError);
    expect((error as EventChainError).message).toMatch(/^SchemaRefused: .* account .* version 3, MoneyWithdrawn revision 1: .*note/);
    expect((await commandSide.heads.get('account', a))?.version).not.toBe(4);
  });

  it('still dead-letters a malformed envelope, as bad input', async () => {
    const a = unique('acc');
    const topic = unique('events');
    const summary = await side.processor()(
      mskEvent([
        { topic, offset: 0, key: a, value: opened(a) },
        { topic, offset: 1, key: a, value: { ...deposited(a, 2, 100), version: 'two' } },
      ]),
    );
    expect(summary).toMatchObject({ deadLettered: 1, halted: [] });
  });
});
