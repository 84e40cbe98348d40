/**
 * The rebuild's fold does not depend on the order in which it reads partitions. When one
 * aggregate's events lie on more than one partition of the events topic (the partition count
 * grew, so its key moved), the rebuild on the real broker and emulator gives the same head
 * whichever partition it reads first: events ahead of their predecessors wait for them, and a
 * gap is reported only if they never come. Reading order is forced by reading one partition
 * at a time through the real topic reader.
 */
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LogReader } from '../../functions/core/log.ts';
import type { EventRecord } from '../../functions/core/wire.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { verifyAggregates } from '../../functions/rebuild/verify-aggregates.ts';
import { rebuildDeps, startCommandSide, type CommandSide } from '../support/command-side.ts';
import { accountEventRecord } from '../support/event-side.ts';
import { unique } from '../support/kafka.ts';

let side: CommandSide;
let producer: Producer;

beforeAll(async () => {
  side = await startCommandSide();
  producer = side.kafka.producer();
  await producer.connect();
});
afterAll(async () => {
  await producer.disconnect();
  await side.close();
});

/** The real reader of the events topic, reading whole partitions one after another in the order given. */
const inOrder = (order: readonly number[]): Pick<LogReader, 'offsets' | 'read' | 'topic'> => ({
  topic: side.eventLog.topic,
  offsets: () => side.eventLog.offsets(),
  read: async (from, to, onChunk) => {
    let stopped = false;
    for (const partition of order) {
      if (stopped) return;
      // Every other partition starts at its end: only this one is read.
      await side.eventLog.read({ ...to, [partition]: from[partition] ?? 0 }, to, async (records) => {
        const next = await onChunk(records);
        if (next === 'stop') stopped = true;
        return next;
      });
    }
  },
});

describe("one aggregate's events on two partitions", () => {
  it('rebuild to the same head whichever partition is read first, with no gap', async () => {
    const a = unique('acc');
    const opened = accountEventRecord(a, 1, 'AccountOpened', { owner: 'Ada' });
    const deposited: EventRecord = { ...accountEventRecord(a, 2, 'MoneyDeposited', { amount: 100, currency: 'EUR' }), revision: 2 };
    const withdrawn = accountEventRecord(a, 3, 'MoneyWithdrawn', { amount: 30 });
    // Versions 1 and 2 before the partition count grew (partition 1), version 3 after (partition 0).
    const send = (partition: number, events: EventRecord[]) =>
      producer.send({
        topic: side.topics.events,
        messages: events.map((e) => ({ partition, key: e.aggregateId, value: JSON.stringify(e) })),
      });
    await send(1, [opened, deposited]);
    await send(0, [withdrawn]);

    const expected = { version: 3, state: { status: 'open', owner: 'Ada', balance: 70 } };
    for (const order of [
      [1, 0, 2],
      [0, 1, 2],
    ]) {
      const report = await rebuildAggregates(rebuildDeps(side, { eventLog: inOrder(order) }));
      expect({ order, status: report.status, gaps: report.gaps }).toEqual({ order, status: 'complete', gaps: [] });
      expect({ order, head: await side.heads.get('account', a) }).toMatchObject({ order, head: expected });
      const verified = await verifyAggregates({ ...rebuildDeps(side), eventLog: inOrder(order) });
      expect({ order, gaps: verified.gaps, differences: verified.differences }).toEqual({ order, gaps: [], differences: [] });
    }
  });
});
