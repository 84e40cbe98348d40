/**
 * The rebuild function's response stays far below Lambda's 6 MB limit however many
 * differences, gaps or unusable records the log holds: each list is cut to its first items
 * (by count and by bytes), with its full length beside it, and what is cut goes to the log.
 */
import { describe, expect, it } from 'vitest';
import { boundReport, REPORT_BYTES, REPORT_ITEMS } from '../../../functions/rebuild/report.ts';

const difference = (i: number) => ({
  aggregateType: 'account',
  aggregateId: `acc-${i}`,
  stored: { balance: i },
  rebuilt: { balance: i + 1 },
});

describe('the rebuild report as the Lambda function returns it', () => {
  it("keeps small reports whole, adding each list's count", () => {
    const logged: unknown[] = [];
    expect(boundReport({ status: 'complete', differences: [difference(1)], gaps: [] }, (...args) => logged.push(args))).toEqual({
      status: 'complete',
      differences: [difference(1)],
      differencesCount: 1,
      gaps: [],
      gapsCount: 0,
    });
    expect(logged).toEqual([]);
  });

  it('cuts a list of a million differences to its first items, says how many there were, and hands the rest to the log', () => {
    const differences = Array.from({ length: 1_000_000 }, (_, i) => difference(i));
    const left: { list: string; count: number; first: number }[] = [];
    const report = boundReport({ status: 'complete', differences }, (list, items, first) =>
      left.push({ list, count: items.length, first }),
    );

    expect(report).toMatchObject({ differencesCount: 1_000_000, truncated: ['differences'] });
    expect(report.differences).toEqual(differences.slice(0, REPORT_ITEMS));
    expect(left).toEqual([{ list: 'differences', count: 1_000_000 - REPORT_ITEMS, first: REPORT_ITEMS }]);
    expect(Buffer.byteLength(JSON.stringify(report))).toBeLessThan(REPORT_BYTES + 1024);
  });

  it("stops at the byte budget when items are large (a head near DynamoDB's 400 KB limit)", () => {
    const large = Array.from({ length: 20 }, (_, i) => ({ aggregateId: `acc-${i}`, state: 'x'.repeat(100_000) }));
    const report = boundReport({ differences: large, gaps: [{ aggregateId: 'a', from: 3 }] }, () => undefined);
    expect((report.differences as unknown[]).length).toBe(2);
    expect(report).toMatchObject({ differencesCount: 20, gapsCount: 1, truncated: ['differences'] });
    expect(Buffer.byteLength(JSON.stringify(report))).toBeLessThan(REPORT_BYTES + 1024);
  });
});
