/**
 * The invariant checker and policy `park`: a command answered `parked` and nothing else is
 * waiting while its aggregate is parked, and lost once it is not (its sequence gone with a
 * restored or rebuilt table): `parked-without-outcome`, when quiescent. Not checked when the
 * parked aggregates were not read.
 */
import { describe, expect, it } from 'vitest';
import type { ResultRecord } from '../../../functions/core/wire.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { checkHistory, type History, type TopicRecord } from '../../../local/verify/invariants.ts';

const result = (r: ResultRecord, offset: number): TopicRecord => ({
  topic: 'results',
  partition: 0,
  offset,
  key: r.aggregateId,
  value: JSON.stringify(r),
});
const parked = (commandId: string, aggregateId: string): ResultRecord => ({
  commandId,
  aggregateType: 'account',
  aggregateId,
  status: 'parked',
  reason: { code: 'Parked', message: 'parked' },
});
const discarded = (commandId: string, aggregateId: string): ResultRecord => ({
  commandId,
  aggregateType: 'account',
  aggregateId,
  status: 'rejected',
  reason: { code: 'DiscardedByOperator', message: 'discarded' },
});

const results = [
  result(parked('c-1', 'a'), 0),
  result(parked('c-2', 'b'), 1),
  result(parked('c-3', 'b'), 2),
  result(discarded('c-3', 'b'), 3),
];
const check = (history: History, quiescent = true) => checkHistory(history, { aggregates, quiescent });

describe('the invariant checker under policy park', () => {
  it('reports a command answered only parked whose aggregate is parked no more', () => {
    const report = check({ events: [], results, parked: new Set() });
    expect(report.violations.map((v) => [v.kind, v.aggregateId, v.commandId])).toEqual([
      ['parked-without-outcome', 'a', 'c-1'],
      ['parked-without-outcome', 'b', 'c-2'],
    ]);
  });

  it('counts commands of aggregates still parked as waiting, and checks nothing while the system runs', () => {
    expect(check({ events: [], results, parked: new Set(['account#a', 'account#b']) }).violations).toEqual([]);
    expect(check({ events: [], results, parked: new Set(['account#a', 'account#b']) }).notes).toContain(
      '2 command(s) wait in parked sequences',
    );
    expect(check({ events: [], results, parked: new Set() }, false).violations).toEqual([]);
  });

  it('says so when the parked aggregates were not read', () => {
    const report = check({ events: [], results });
    expect(report.violations).toEqual([]);
    expect(report.notes).toContain('parked commands not checked: parked aggregates not read');
  });
});
