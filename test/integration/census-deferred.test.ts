/**
 * The census left unwritten for a few batches (functions/event/census-writes.ts) on the real
 * broker and emulator: one function holds what it counted and ends, another meets the records
 * it held and reads them back from the topic (the Kafka reader the deployed event side uses);
 * the census item holds exactly what the topic holds over the offsets it says it counted, with
 * fewer writes than one per partition per batch.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TopicLogs } from '../../functions/adapters/kafka/topic-log.ts';
import { readEvent } from '../../functions/core/event-reader.ts';
import { registry } from '../../functions/core/registry.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { addToCensus, readCensus, type Sighting } from '../../functions/event/census.ts';
import { startCommandSide, type CommandSide } from '../support/command-side.ts';
import { startEventSide, triggerBatches, type EventSide } from '../support/event-side.ts';
import { eventsBeforeRevisions } from '../support/events.ts';
import { produceJson, readTopic } from '../support/kafka.ts';

const log = eventsBeforeRevisions();

let command: CommandSide;
let event: EventSide;
let logs: TopicLogs;

beforeAll(async () => {
  command = await startCommandSide();
  event = await startEventSide();
  await produceJson(command.kafka, command.topics.events, log);
  logs = new TopicLogs(command.kafka);
}, 120_000);
afterAll(async () => {
  await logs.close();
  await command.close();
  await event.close();
});

describe('the census left unwritten for a few batches', () => {
  it('counts what an ended function held, read back from the topic, exactly once', async () => {
    const records = await readTopic(command.kafka, command.topics.events);
    const batches = triggerBatches(records, command.topics.events, 3);
    let readBack = 0;
    const census = {
      batches: 4,
      log: {
        sample: async (topic: string, partition: number, from: number, to: number, limit: number) => {
          const found = await logs.sample(topic, partition, from, to, limit);
          readBack += found.length;
          return found;
        },
      },
    };
    let censusWrites = 0;
    const rm = event.readModels;
    const readModels = {
      tableName: rm.tableName,
      readBatch: rm.readBatch.bind(rm),
      putControl: rm.putControl.bind(rm),
      write: (...args: Parameters<typeof rm.write>) => {
        if (args[0].pk === '~census') censusWrites++;
        return rm.write(...args);
      },
    };
    const ended = event.processor({ census, readModels });
    const half = Math.floor(batches.length / 2);
    for (const batch of batches.slice(0, half)) expect((await ended(batch)).halted).toEqual([]);
    // The function that took over meets records the first one held unwritten.
    const next = event.processor({ census, readModels });
    for (const batch of batches.slice(half)) expect((await next(batch)).halted).toEqual([]);

    const stored = await readCensus(event.readModels);
    const known = registry(aggregates);
    const partitions = [...new Set(records.map((r) => r.partition))];
    for (const partition of partitions) {
      const counted = stored.get(`${command.topics.events}-${partition}`);
      expect(counted).toBeDefined();
      const sightings: Sighting[] = records
        .filter((r) => r.partition === partition && r.offset >= counted!.from && r.offset <= counted!.through)
        .map((r) => {
          const position = { topic: command.topics.events, partition, offset: r.offset };
          const read = readEvent({ key: r.key, value: r.value, position }, known);
          return { position, stored: 'event' in read ? read.event.stored : read.fault.stored };
        });
      expect(counted).toEqual(addToCensus(undefined, sightings));
    }
    expect(readBack).toBeGreaterThan(0);
    // Once per partition per batch without the deferral.
    const perPartition = batches.reduce((n, b) => n + Object.keys(b.records).length, 0);
    expect(censusWrites).toBeLessThan(perPartition / 2);
  });
});
