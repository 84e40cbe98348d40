/**
 * The rebuild benchmark's log: account histories as the command side would have written
 * them (seeded, so every run replays the same), and their producing to an events topic.
 */
import type { Kafka, Message } from 'kafkajs';
import { createProducer } from '../functions/adapters/kafka/clients.ts';
import { eventId, type EventRecord } from '../functions/core/wire.ts';

/** Messages per producer send: about 600 KB per partition, under the broker's default 1 MB batch limit. */
const SEND_CHUNK = 5_000;
const COMMAND_PARTITIONS = 3;
/** mulberry32: the same histories on every run. */
const seeded = (seed: number) => {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
};

/**
 * Account histories as the command side writes them: AccountOpened, then deposits and
 * withdrawals that keep the balance at or above zero, versions 1..n, one command each with
 * its source position on a commands partition. Interleaved round by round across accounts.
 */
export const generate = (events: number, accounts: number) => {
  const random = seeded(20261130);
  const ids = Array.from({ length: accounts }, (_, i) => `bench-acc-${String(i).padStart(6, '0')}`);
  const lengths = ids.map((_, i) => Math.floor(events / accounts) + (i < events % accounts ? 1 : 0));
  const balances = ids.map(() => 0);
  const commandOffsets = Array.from({ length: COMMAND_PARTITIONS }, () => 0);
  // An hour before the run, whatever the day: the commands are within the dedupe window, so the
  // rebuild restores the archive of every account, on every run alike.
  const start = Date.now() - 3_600_000;
  const messages: Message[] = [];
  const longest = Math.max(...lengths);
  for (let round = 0; round < longest; round++) {
    ids.forEach((aggregateId, i) => {
      if (round >= (lengths[i] ?? 0)) return;
      const balance = balances[i] ?? 0;
      const version = round + 1;
      const n = messages.length;
      let body: Pick<EventRecord, 'type' | 'data'>;
      if (version === 1) body = { type: 'AccountOpened', data: { owner: `Owner ${i}` } };
      else if (balance > 0 && random() < 0.4) {
        const amount = 1 + Math.floor(random() * balance);
        body = { type: 'MoneyWithdrawn', data: { amount } };
        balances[i] = balance - amount;
      } else {
        const amount = 1 + Math.floor(random() * 1000);
        body = { type: 'MoneyDeposited', data: { amount } };
        balances[i] = balance + amount;
      }
      const partition = i % COMMAND_PARTITIONS;
      const event: EventRecord = {
        eventId: eventId('account', aggregateId, version),
        aggregateType: 'account',
        aggregateId,
        version,
        ...body,
        commandId: `bench-cmd-${n}`,
        occurredAt: new Date(start + n).toISOString(),
        source: { topic: 'commands', partition, offset: commandOffsets[partition]!++ },
      };
      messages.push({ key: aggregateId, value: JSON.stringify(event) });
    });
  }
  return { messages, expected: new Map(ids.map((id, i) => [id, { version: lengths[i] ?? 0, balance: balances[i] ?? 0 }])) };
};

/** Produces `messages` to `topic`, in chunks the broker takes. */
export const produce = async (kafka: Kafka, topic: string, messages: readonly Message[]) => {
  const producer = createProducer(kafka);
  await producer.connect();
  try {
    for (let i = 0; i < messages.length; i += SEND_CHUNK) await producer.send({ topic, messages: messages.slice(i, i + SEND_CHUNK) });
  } finally {
    await producer.disconnect();
  }
};
