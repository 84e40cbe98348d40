/**
 * Dead letters are readable whoever wrote them: this project's records and the records of
 * Lambda's Kafka on-failure destination (fixture: the format AWS documents), for `tail
 * dead-letter` and the tests alike.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { deadLetter, readDeadLetter } from '../../../functions/core/dead-letter.ts';
import { decodeMskEvent } from '../../../functions/core/trigger-event.ts';
import { formatDeadLetter } from '../../../local/cli/tail.ts';
import type { WatchedRecord } from '../../../local/client/watch.ts';
import { mskEvent } from '../../support/msk.ts';

const lambdaRecord = readFileSync(new URL('../../fixtures/lambda-kafka-on-failure-record.json', import.meta.url), 'utf8');

const watched = (value: string): WatchedRecord => ({
  topic: 'dead-letter',
  partition: 0,
  offset: 7,
  timestamp: Date.UTC(2026, 10, 30, 12),
  key: null,
  value: Buffer.from(value),
  headers: {},
  receivedAt: 0,
});

describe('reading dead letters', () => {
  it("reads a record of Lambda's Kafka on-failure destination: the failed record with its source, key, value and the condition", () => {
    expect(readDeadLetter(lambdaRecord)).toEqual([
      {
        format: 'lambda-on-failure',
        code: 'RetriesExhausted',
        message: expect.stringContaining(
          'failed (Unhandled) after 3 invocations, RetriesExhausted, at 2019-11-14T18:16:05.568Z',
        ) as unknown,
        source: { topic: 'my-topic', partition: 0, offset: 100 },
        key: 'dGVzdC1rZXk=',
        value: 'dGVzdC12YWx1ZQ==',
      },
    ]);
  });

  it("reads this project's dead letters with the same fields", () => {
    const [raw] = decodeMskEvent(mskEvent([{ topic: 'commands', partition: 2, offset: 41, key: 'acc-1', value: 'not json' }])).flat();
    const letter = deadLetter(raw!, { code: 'InvalidCommand', message: 'value is not JSON' });
    expect(readDeadLetter(JSON.stringify(letter.record))).toEqual([
      {
        format: 'kafka-aggregates',
        code: 'InvalidCommand',
        message: 'value is not JSON',
        source: { topic: 'commands', partition: 2, offset: 41 },
        key: Buffer.from('acc-1').toString('base64'),
        value: Buffer.from('not json').toString('base64'),
      },
    ]);
  });

  it('returns nothing for a record in neither format, which tail then prints as it is', () => {
    expect(readDeadLetter('{"hello":1}')).toBeUndefined();
    expect(readDeadLetter('not json')).toBeUndefined();
    expect(formatDeadLetter(watched('not json'))).toBe('0@7 2026-11-30T12:00:00.000Z (null) not json');
  });

  it('prints a Lambda dead letter with its source and the original value as text', () => {
    expect(formatDeadLetter(watched(lambdaRecord)).split('\n')).toEqual([
      expect.stringMatching(
        /^0@7 2026-11-30T12:00:00\.000Z RetriesExhausted my-topic-0@100 key=test-key Lambda's on-failure destination: /,
      ) as unknown,
      '  value: test-value',
    ]);
  });
});
