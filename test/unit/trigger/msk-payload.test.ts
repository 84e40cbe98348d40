import { readFileSync } from 'node:fs';
import type { KafkaMessage } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import type { MskEvent } from '../../../functions/core/trigger-event.ts';
import { mskEvent, mskHeaders, toMskRecord } from '../../../local/trigger/msk-payload.ts';

const fixture = JSON.parse(readFileSync(new URL('../../fixtures/msk-commands-event.json', import.meta.url), 'utf8')) as MskEvent;

const message = (offset: number, key: string | null, value: string, headers: KafkaMessage['headers'] = {}): KafkaMessage => ({
  offset: String(offset),
  timestamp: '1764496800000',
  key: key === null ? null : Buffer.from(key),
  value: Buffer.from(value),
  headers,
  attributes: 0,
});

describe('the MSK payload built from kafkajs records', () => {
  it('has the shape of the documented fixture', () => {
    const sample = Object.values(fixture.records)[0]?.[0];
    const built = mskEvent([toMskRecord('commands', 0, message(0, 'acc-1', '{}', { h: 'x' }))], {
      eventSourceArn: 'arn',
      bootstrapServers: 'b:9092',
    });
    expect(Object.keys(built)).toEqual(Object.keys(fixture));
    expect(Object.keys(built.records)).toEqual(['commands-0']);
    expect(Object.keys(built.records['commands-0']![0]!).sort()).toEqual(Object.keys(sample!).sort());
  });

  it('encodes key and value in base64, omits a null key, and keeps the timestamp as a number', () => {
    const [withKey, withoutKey] = [toMskRecord('t', 2, message(5, 'k', 'v')), toMskRecord('t', 2, message(6, null, 'w'))];
    expect(withKey).toMatchObject({
      topic: 't',
      partition: 2,
      offset: 5,
      timestamp: 1764496800000,
      timestampType: 'CREATE_TIME',
      key: 'aw==',
      value: 'dg==',
    });
    expect(withoutKey).not.toHaveProperty('key');
  });

  it('turns headers into one single-key object per value, values as byte arrays', () => {
    expect(mskHeaders({ a: Buffer.from('hi'), b: [Buffer.from('x'), Buffer.from('y')] })).toEqual([
      { a: [104, 105] },
      { b: [120] },
      { b: [121] },
    ]);
  });

  it('groups records by topic-partition in offset order', () => {
    const event = mskEvent(
      [toMskRecord('t', 1, message(9, 'k', 'a')), toMskRecord('t', 0, message(3, 'k', 'b')), toMskRecord('t', 1, message(8, 'k', 'c'))],
      { eventSourceArn: 'arn', bootstrapServers: 'b' },
    );
    expect(Object.fromEntries(Object.entries(event.records).map(([tp, rs]) => [tp, rs.map((r) => r.offset)]))).toEqual({
      't-1': [8, 9],
      't-0': [3],
    });
  });
});
