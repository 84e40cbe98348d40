import { describe, expect, it } from 'vitest';
import { formatCensus, type Coverage } from '../../../local/cli/census.ts';

const coverageLine = (p: Coverage): string => formatCensus([], [p])[2] as string;

describe('census: what a partition has not counted, and why', () => {
  it('tells the records held for the next census write from those the event side has not reached, and from those before the census', () => {
    expect(
      coverageLine({
        partition: 'events-0',
        counted: { from: 100, through: 179 },
        log: { start: 90, end: 200 },
        uncounted: 30,
        applied: 15,
      }),
    ).toBe(
      '  events-0: counted 100..179, log 90..199 (30 records not counted: 10 from before the census began; ' +
        '15 applied by the event side, held for its next census write (every tenth batch of a warm function); 5 not reached by the event side yet)',
    );
    expect(
      coverageLine({ partition: 'events-1', counted: { from: 0, through: 9 }, log: { start: 0, end: 12 }, uncounted: 2, applied: 2 }),
    ).toBe(
      '  events-1: counted 0..9, log 0..11 (2 records not counted: 2 applied by the event side, held for its next census write (every tenth batch of a warm function))',
    );
    expect(coverageLine({ partition: 'events-2', log: { start: 0, end: 4 }, uncounted: 4, applied: 0 })).toBe(
      '  events-2: nothing counted, log 0..3 (4 records not counted: 4 not reached by the event side yet)',
    );
  });

  it('says no more than the count when the event side was not asked where it stands, and nothing when all is counted', () => {
    expect(coverageLine({ partition: 'events-0', counted: { from: 0, through: 9 }, log: { start: 0, end: 12 }, uncounted: 2 })).toBe(
      '  events-0: counted 0..9, log 0..11 (2 records not counted)',
    );
    expect(
      coverageLine({ partition: 'events-0', counted: { from: 0, through: 11 }, log: { start: 0, end: 12 }, uncounted: 0, applied: 0 }),
    ).toBe('  events-0: counted 0..11, log 0..11');
  });
});
