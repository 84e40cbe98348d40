/**
 * The outbox re-send of a batch that committed but failed to publish, on the real broker and
 * emulator: delivered again in another shape (here, only its first record), the batch that
 * publishes the outbox does not hold every command that caused it, and each re-sent event
 * still carries its own command's W3C trace (read back from the commands topic), so `trace`
 * shows the whole chain.
 */
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTraceparent, TRACEPARENT } from '../../functions/core/trace-context.ts';
import type { EventRecord } from '../../functions/core/wire.ts';
import { crashingPublisher, startCommandSide, type CommandSide } from '../support/command-side.ts';
import { createTopics, readTopic, unique } from '../support/kafka.ts';
import { command, mskEvent } from '../support/msk.ts';

let side: CommandSide;
let producer: Producer;
const commands = unique('commands');

beforeAll(async () => {
  side = await startCommandSide();
  const admin = side.kafka.admin();
  await admin.connect();
  await createTopics(admin, { [commands]: 3 }).finally(() => admin.disconnect());
  producer = side.kafka.producer();
  await producer.connect();
}, 60_000);

afterAll(async () => {
  await producer?.disconnect();
  await side?.close();
});

describe('the re-send of a committed but unpublished outbox', () => {
  it("carries each event's original trace, whether or not its command is in the batch that re-sends it", async () => {
    const id = unique('acc');
    const traceOf = (n: number) => `00-${String(n).repeat(32)}-00f067aa0ba902b7-01`;
    const sent = [command(id, 'OpenAccount', { owner: 'Ada' }), command(id, 'Deposit', { amount: 5 })];
    const records = [];
    for (const [i, value] of sent.entries()) {
      const headers = { [TRACEPARENT]: traceOf(i + 1) };
      const [meta] = await producer.send({
        topic: commands,
        acks: -1,
        messages: [{ partition: 0, key: id, value: JSON.stringify(value), headers }],
      });
      records.push({ topic: commands, partition: 0, offset: Number(meta?.baseOffset), key: id, value, headers });
    }
    // Both decided and committed, then the publish fails: the outbox holds both events.
    await expect(side.processor({ publisher: crashingPublisher(side.publisher) })(mskEvent(records))).rejects.toThrow(/injected crash/);
    expect((await side.heads.get('account', id))?.outbox.map((e) => e.version)).toEqual([1, 2]);
    expect((await readTopic(side.kafka, side.topics.events)).filter((r) => r.key === id)).toEqual([]);

    // Delivered again, only its first record: the outbox goes out whole.
    await side.processor()(mskEvent(records.slice(0, 1)));
    const events = (await readTopic(side.kafka, side.topics.events))
      .filter((r) => r.key === id)
      .map((r) => ({
        version: (JSON.parse(r.value ?? 'null') as EventRecord).version,
        trace: parseTraceparent(r.headers[TRACEPARENT])?.traceId,
      }));
    expect(events).toEqual([
      { version: 1, trace: '1'.repeat(32) },
      { version: 2, trace: '2'.repeat(32) },
    ]);
  }, 60_000);
});
