import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  decodeMskEvent,
  decodeUtf8,
  oldestRecordAges,
  type MskEvent,
  type MskRecord,
  type TriggerRecord,
} from '../../../functions/core/trigger-event.ts';
import { mskEvent, mskRecord } from '../../support/msk.ts';

const fixture = (name: string): MskEvent =>
  JSON.parse(readFileSync(new URL(`../../fixtures/${name}`, import.meta.url), 'utf8')) as MskEvent;

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

/** The single record of a one-record event with these fields. */
const decodeOne = (fields: Partial<MskRecord>): TriggerRecord => {
  const record: MskRecord = {
    topic: 'commands',
    partition: 0,
    offset: 5,
    timestamp: 1_764_496_800_000,
    timestampType: 'CREATE_TIME',
    ...fields,
  };
  const partitions = decodeMskEvent({ eventSource: 'aws:kafka', records: { 'commands-0': [record] } });
  expect(partitions).toHaveLength(1);
  const [only] = partitions[0] ?? [];
  if (only === undefined) throw new Error('no record decoded');
  return only;
};

describe('decodeMskEvent: key and value', () => {
  it('decodes base64 key and value to their bytes', () => {
    const record = decodeOne({ key: btoa('acc-1'), value: btoa('{"a":1}') });
    expect(record.key).toStrictEqual(bytes('acc-1'));
    expect(record.value).toStrictEqual(bytes('{"a":1}'));
    expect([record.keyFault, record.valueFault]).toEqual([undefined, undefined]);
  });

  it('decodes bytes that are not text, byte for byte', () => {
    const raw = new Uint8Array([0, 0xff, 0x80, 0x7f, 0xfe]);
    const record = decodeOne({ value: Buffer.from(raw).toString('base64') });
    expect(record.value).toStrictEqual(raw);
  });

  it('decodes multi-byte UTF-8 so that decodeUtf8 gives the original text back', () => {
    const record = decodeOne({ value: Buffer.from('Zoë €5 😀').toString('base64') });
    expect(decodeUtf8(record.value ?? new Uint8Array())).toBe('Zoë €5 😀');
  });

  it('gives key undefined, and no fault, when the key is absent', () => {
    const record = decodeOne({ value: btoa('x') });
    expect(record.key).toBeUndefined();
    expect([record.keyFault, record.valueFault]).toEqual([undefined, undefined]);
  });

  it('gives key undefined, and no fault, when the key is null', () => {
    const record = decodeOne({ key: null, value: btoa('x') });
    expect(record.key).toBeUndefined();
    expect([record.keyFault, record.valueFault]).toEqual([undefined, undefined]);
  });

  it('gives value undefined, and no fault, when the value is null (a tombstone)', () => {
    const record = decodeOne({ key: btoa('acc-1'), value: null });
    expect(record.value).toBeUndefined();
    expect([record.keyFault, record.valueFault]).toEqual([undefined, undefined]);
  });

  it('decodes an empty base64 string to zero bytes, not to undefined', () => {
    const record = decodeOne({ value: '' });
    expect(record.value).toStrictEqual(new Uint8Array());
    expect([record.keyFault, record.valueFault]).toEqual([undefined, undefined]);
  });

  it('keeps the record exactly as delivered, with its coordinates', () => {
    const original = mskRecord({ offset: 42, partition: 3, key: 'acc-1', value: { a: 1 }, headers: { h: 'v' } });
    const [[record]] = decodeMskEvent(mskEvent([{ offset: 42, partition: 3, key: 'acc-1', value: { a: 1 }, headers: { h: 'v' } }])) as [
      [TriggerRecord],
    ];
    expect(record.original).toStrictEqual(original);
    expect(record).toMatchObject({ topic: 'commands', partition: 3, offset: 42, timestamp: original.timestamp });
  });
});

describe('decodeMskEvent: invalid base64 is a fault, never an exception', () => {
  const invalid: readonly (readonly [string, string])[] = [
    ['a character outside the alphabet', 'eyJhIjoxfQ!!'],
    ['the URL-safe alphabet', 'PDw_Pz4-'],
    ['embedded whitespace', 'eyJh IjoxfQ=='],
    ['missing padding', 'YQ'],
    ['too much padding', 'YQ==='],
    ['padding in the middle', 'YQ==YQ=='],
    ['a length that is not a multiple of four', 'YWJjZ'],
    ['a single character', 'Y'],
  ];

  it.each(invalid)('reports a value with %s as a fault', (_, value) => {
    let record: TriggerRecord | undefined;
    expect(() => (record = decodeOne({ key: btoa('acc-1'), value }))).not.toThrow();
    expect(record?.valueFault).toBe('record value is not valid base64');
    expect(record?.value).toBeUndefined();
    expect(record?.key).toStrictEqual(bytes('acc-1'));
  });

  it.each(invalid)('reports a key with %s as a fault', (_, key) => {
    const record = decodeOne({ key, value: btoa('{}') });
    expect(record.keyFault).toBe('record key is not valid base64');
    expect(record.key).toBeUndefined();
  });

  it('decodes the other records of the partition when one is faulty', () => {
    const event = mskEvent([
      { offset: 1, key: 'acc-1', value: { n: 1 } },
      { offset: 2, key: 'acc-1', rawValue: '%%%' },
      { offset: 3, key: 'acc-1', value: { n: 3 } },
    ]);
    const [partition] = decodeMskEvent(event) as [TriggerRecord[]];
    expect(partition.map((r) => [r.offset, r.valueFault ?? r.keyFault])).toStrictEqual([
      [1, undefined],
      [2, 'record value is not valid base64'],
      [3, undefined],
    ]);
  });
});

describe('decodeMskEvent: partitions and order', () => {
  it('puts the records of a partition in numeric offset order', () => {
    const event: MskEvent = {
      eventSource: 'aws:kafka',
      records: { 'commands-0': [100, 9, 10, 1000, 99].map((offset) => mskRecord({ offset, value: 'x' })) },
    };
    const [partition] = decodeMskEvent(event) as [TriggerRecord[]];
    expect(partition.map((r) => r.offset)).toStrictEqual([9, 10, 99, 100, 1000]);
  });

  it('keeps each partition separate and in order', () => {
    const event = mskEvent([
      { offset: 7, partition: 1, value: 'b' },
      { offset: 3, partition: 0, value: 'a' },
      { offset: 8, partition: 1, value: 'b' },
      { offset: 2, partition: 0, value: 'a' },
      { offset: 1, partition: 0, topic: 'other', value: 'c' },
    ]);
    const partitions = decodeMskEvent(event);
    expect(partitions).toHaveLength(3);
    const summary = partitions.map((p) => p.map((r) => `${r.topic}-${r.partition}@${r.offset}`));
    expect(summary).toEqual(expect.arrayContaining([['commands-1@7', 'commands-1@8'], ['commands-0@2', 'commands-0@3'], ['other-0@1']]));
  });

  it('gives no partitions for an event with no records', () => {
    expect(decodeMskEvent({ eventSource: 'aws:kafka', records: {} })).toStrictEqual([]);
  });
});

describe('MSK fixtures', () => {
  it('decodes the commands fixture: two partitions of account commands keyed by aggregateId', () => {
    const event = fixture('msk-commands-event.json');
    expect(event.eventSource).toBe('aws:kafka');
    expect(Object.keys(event.records).sort()).toStrictEqual(['commands-0', 'commands-1']);
    const partitions = decodeMskEvent(event);
    expect(partitions).toHaveLength(2);
    for (const partition of partitions) {
      expect(partition.length).toBeGreaterThan(1);
      for (const record of partition) {
        expect([record.keyFault, record.valueFault]).toEqual([undefined, undefined]);
        expect(record.original.timestampType).toBe('CREATE_TIME');
        const value = JSON.parse(decodeUtf8(record.value ?? new Uint8Array()) ?? '') as { aggregateId: string; type: string };
        expect(decodeUtf8(record.key ?? new Uint8Array())).toBe(value.aggregateId);
        expect(['OpenAccount', 'Deposit', 'Withdraw']).toContain(value.type);
      }
      // Records of one partition come in offset order, and every record sits under its own topic-partition.
      expect(partition.map((r) => r.offset)).toStrictEqual([...partition.map((r) => r.offset)].sort((a, b) => a - b));
      expect(new Set(partition.map((r) => `${r.topic}-${r.partition}`)).size).toBe(1);
    }
  });

  it('keeps the header bytes of the fixture as delivered', () => {
    const [first] = fixture('msk-commands-event.json').records['commands-0'] ?? [];
    expect(first?.headers).toStrictEqual([{ 'correlation-id': [...bytes('corr-1')] }]);
  });

  it('decodes the bad-records fixture without throwing, faulting only the bad base64', () => {
    const partitions = decodeMskEvent(fixture('msk-commands-bad-records.json'));
    expect(partitions).toHaveLength(1);
    const [partition] = partitions as [TriggerRecord[]];
    expect(partition.map((r) => ({ offset: r.offset, fault: r.valueFault ?? r.keyFault, hasKey: r.key !== undefined }))).toStrictEqual([
      { offset: 20, fault: undefined, hasKey: true },
      { offset: 21, fault: 'record value is not valid base64', hasKey: true },
      { offset: 22, fault: undefined, hasKey: false },
      { offset: 23, fault: undefined, hasKey: true },
    ]);
  });
});

describe('oldestRecordAges: lag in time', () => {
  const at = (topic: string, partition: number, offset: number, timestamp: number): MskRecord => ({
    topic,
    partition,
    offset,
    timestamp,
    timestampType: 'CREATE_TIME',
    key: null,
    value: null,
  });

  it("gives each partition the age of its batch's oldest record, and none below zero when the producer's clock runs ahead", () => {
    const event: MskEvent = {
      eventSource: 'aws:kafka',
      records: {
        'events-0': [at('events', 0, 7, 9_000), at('events', 0, 8, 9_500)],
        'events-1': [at('events', 1, 3, 12_000)],
      },
    };
    expect(oldestRecordAges(event, 10_000)).toEqual(
      new Map([
        ['events-0', 1_000],
        ['events-1', 0],
      ]),
    );
  });
});
