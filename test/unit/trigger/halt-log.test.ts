import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haltLogLine } from '../../../functions/event/halts.ts';
import { readingHalts } from '../../../local/trigger/halt-log.ts';

const gapHalt = {
  cause: 'gap' as const,
  position: { topic: 'events', partition: 3, offset: 12 },
  gap: {
    consumer: { kind: 'projection' as const, name: 'account-summary' },
    item: 'acc-1',
    aggregateType: 'account',
    aggregateId: 'acc-1',
    appliedVersion: 2,
    eventVersion: 4,
    eventId: 'account:acc-1:4',
    position: { topic: 'events', partition: 3, offset: 12 },
  },
};

/** Writes a halt's log line as the Powertools logger does: one JSON object per line, on stderr for a warning. */
const logged = (): void => {
  const { level, message, attributes } = haltLogLine(gapHalt);
  process.stderr.write(`${JSON.stringify({ level: level.toUpperCase(), message, ...attributes })}\n`);
};

describe('the emulator reads halts from the handler’s log', () => {
  // The lines these tests write are not shown: the streams are silenced before the emulator
  // wraps them, and put back afterwards (with the wrapping).
  const writes = { stdout: process.stdout.write.bind(process.stdout), stderr: process.stderr.write.bind(process.stderr) };
  beforeAll(() => {
    process.stdout.write = () => true;
    process.stderr.write = () => true;
  });
  afterAll(() => {
    process.stdout.write = writes.stdout;
    process.stderr.write = writes.stderr;
  });

  it('finds the halt line an invocation writes, by partition, with the error that names it', async () => {
    const reasons = new Map<string, string>();
    await readingHalts(reasons, async () => {
      await Promise.resolve();
      logged();
    });
    expect(reasons).toEqual(
      new Map([
        [
          'events-3',
          'EventGapError: projection account-summary, item acc-1: account acc-1 has version 2 applied, but the next event has version 4 (versions 3..3 missing), at events-3 offset 12; that partition halts there',
        ],
      ]),
    );
  });

  it('takes nothing from lines written outside the invocation, nor from lines that are not halts', () => {
    const reasons = new Map<string, string>();
    readingHalts(reasons, () => process.stdout.write('{"halt": "not an object"}\nplain "halt" text\n'));
    logged();
    expect(reasons.size).toBe(0);
  });
});
