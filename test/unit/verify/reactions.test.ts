/**
 * The invariant checker's reaction check on histories built by hand: the low-balance alert's
 * commands, derived again from the account's events, must each have an outcome, none may exist
 * that no event issued, and the alert's events and results must be its decision of them in the
 * order issued. Each breakage is found and names the command.
 */
import { describe, expect, it } from 'vitest';
import { reactionCommandId } from '../../../functions/core/reaction.ts';
import { eventId, type EventRecord, type ResultRecord } from '../../../functions/core/wire.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { lowBalanceAlert } from '../../../functions/reactions/low-balance-alert.ts';
import { commandKey } from '../../../local/verify/check-results.ts';
import { checkHistory, type History, type TopicRecord, type ViolationKind } from '../../../local/verify/invariants.ts';

const REACTION = 'low-balance-alert';
const THRESHOLD = 1000;

const event = (aggregateType: string, version: number, type: string, data: Record<string, unknown>, commandId: string): EventRecord => ({
  eventId: eventId(aggregateType, 'a1', version),
  aggregateType,
  aggregateId: 'a1',
  version,
  type,
  data,
  commandId,
  occurredAt: new Date(Date.UTC(2026, 11, 2, 10, 0, version)).toISOString(),
  source: { topic: 'commands', partition: 0, offset: version * 10 },
});

const account = (version: number, type: string, data: Record<string, unknown> = {}) =>
  event('account', version, type, data, `c-${version}`);
/** The id the reaction gives its command for account event `version`. */
const issued = (version: number) => reactionCommandId(REACTION, eventId('account', 'a1', version), 0);
const observation = (sourceVersion: number, balance: number) => ({ balance, threshold: THRESHOLD, sourceVersion });

/** Opened, 1,500 in (up from below: a re-arm, a no-op as nothing was raised), 600 out (low: raise), 200 out (low again: a no-op), 2,000 in (back up: re-arm). */
const accountEvents = [
  account(1, 'AccountOpened', { owner: 'Ada' }),
  account(2, 'MoneyDeposited', { amount: 1500 }),
  account(3, 'MoneyWithdrawn', { amount: 600 }),
  account(4, 'MoneyWithdrawn', { amount: 200 }),
  account(5, 'MoneyDeposited', { amount: 2000 }),
];
const alertEvents = [
  event('alert', 1, 'LowBalanceAlertRaised', observation(3, 900), issued(3)),
  event('alert', 2, 'LowBalanceAlertRearmed', observation(5, 2700), issued(5)),
];

const accepted = (aggregateType: string, commandId: string, version: number): ResultRecord => ({
  commandId,
  aggregateType,
  aggregateId: 'a1',
  status: 'accepted',
  version,
});
const rejectedWith = (commandId: string, code: string, message: string): ResultRecord => ({
  commandId,
  aggregateType: 'alert',
  aggregateId: 'a1',
  status: 'rejected',
  reason: { code, message },
});
const notRetained = (commandId: string): ResultRecord => rejectedWith(commandId, 'OutcomeNotRetained', 'no longer kept');

const records = (values: readonly unknown[]): TopicRecord[] =>
  values.map((v, offset) => ({ topic: 'events', partition: 0, offset, key: 'a1', value: JSON.stringify(v) }));

/** Every account command's result, and the alert's: the no-op at 0, raised at 1, the no-op at 1, re-armed at 2. */
const cleanResults = (): ResultRecord[] => [
  ...accountEvents.map((e) => accepted('account', e.commandId, e.version)),
  accepted('alert', issued(2), 0),
  accepted('alert', issued(3), 1),
  accepted('alert', issued(4), 1),
  accepted('alert', issued(5), 2),
];

const history = (events: readonly EventRecord[] = [...accountEvents, ...alertEvents], results = cleanResults()): History => ({
  events: records(events),
  results: records(results),
  resultsComplete: true,
});

const check = (h: History, quiescent = true) =>
  checkHistory(h, { aggregates, acceptsWithoutEvents: ['alert'], reactions: [lowBalanceAlert(THRESHOLD)], quiescent });
const kinds = (h: History, quiescent = true): ViolationKind[] => check(h, quiescent).violations.map((v) => v.kind);

describe("the invariant checker's reaction check", () => {
  it('finds nothing wrong when every command the reaction issues was decided once, in order; counts duplicate answers', () => {
    const report = check(
      history([...accountEvents, ...alertEvents], [...cleanResults(), accepted('alert', issued(3), 1), notRetained(issued(4))]),
    );
    expect(report.violations).toEqual([]);
    expect(report.counts).toMatchObject({ reactionCommands: 4, reactionDuplicates: 2, reactionTargets: 1 });
  });

  it('reports a command the events issue that has no outcome, only once results can no longer be in flight', () => {
    const results = cleanResults().filter((r) => r.commandId !== issued(4));
    expect(check(history(undefined, results)).violations).toMatchObject([
      { kind: 'reaction-command-without-outcome', aggregateType: 'alert', aggregateId: 'a1', commandId: issued(4) },
    ]);
    expect(kinds(history(undefined, results), false)).toEqual([]);
  });

  it('reports a command in the reaction id space that no event issues, from its result or its events', () => {
    const stray = reactionCommandId(REACTION, eventId('account', 'a1', 1), 0);
    expect(check(history(undefined, [...cleanResults(), accepted('alert', stray, 2)])).violations).toMatchObject([
      { kind: 'reaction-command-uncaused', aggregateId: 'a1', commandId: stray },
    ]);
    // A raise the account's withdrawals never called for, decided and on the log.
    const extra = event(
      'alert',
      3,
      'LowBalanceAlertRaised',
      observation(6, 0),
      reactionCommandId(REACTION, eventId('account', 'a1', 6), 0),
    );
    const found = kinds(history([...accountEvents, ...alertEvents, extra], [...cleanResults(), accepted('alert', extra.commandId, 3)]));
    expect(found).toEqual(['reaction-command-uncaused']);
  });

  it("reports alert events that are not the alert's decision of the commands in the order issued", () => {
    // The no-op raise decided as a second alert: the commands were decided out of order, or twice.
    const twice = [
      event('alert', 1, 'LowBalanceAlertRaised', observation(3, 900), issued(3)),
      event('alert', 2, 'LowBalanceAlertRaised', observation(4, 700), issued(4)),
      event('alert', 3, 'LowBalanceAlertRearmed', observation(5, 2700), issued(5)),
    ];
    const results = [
      ...accountEvents.map((e) => accepted('account', e.commandId, e.version)),
      accepted('alert', issued(2), 0),
      ...twice.map((e) => accepted('alert', e.commandId, e.version)),
    ];
    expect(check(history([...accountEvents, ...twice], results)).violations).toMatchObject([
      { kind: 'reaction-decision-mismatch', aggregateType: 'alert', aggregateId: 'a1', versions: [2], commandId: issued(4) },
    ]);
    // The re-arm never decided, though answered.
    expect(kinds(history([...accountEvents, alertEvents[0]!]))).toContain('reaction-decision-mismatch');
  });

  it('reports a result of a command that is not its in-order decision: a raise answered as a no-op, a no-op answered as rejected', () => {
    const wrongVersion = [...cleanResults(), accepted('alert', issued(3), 2)];
    expect(kinds(history(undefined, wrongVersion))).toContain('reaction-decision-mismatch');
    const rejected = rejectedWith(issued(4), 'InvalidCommand', 'no');
    expect(check(history(undefined, [...cleanResults(), rejected])).violations).toMatchObject([
      { kind: 'reaction-decision-mismatch', commandId: issued(4) },
    ]);
  });

  it('leaves out the decisions of a target that also receives other commands, and says so', () => {
    const client = event('alert', 3, 'LowBalanceAlertRaised', observation(9, 0), 'from-a-client');
    const report = check(history([...accountEvents, ...alertEvents, client], [...cleanResults(), accepted('alert', 'from-a-client', 3)]));
    expect(report.violations).toEqual([]);
    expect(report.counts.reactionTargets).toBe(0);
    expect(report.notes.join('\n')).toContain('1 target aggregate(s) also receive other commands');
  });

  it("takes an operator's skip or discard of a record of a command as no decision of it, unless a copy was decided", () => {
    const without = (id: string) => cleanResults().filter((r) => r.commandId !== id);
    const skipped = (id: string) => rejectedWith(id, 'SkippedByOperator', 'skipped');
    // The no-op raise skipped or discarded, alone or beside its decision (before the release was recorded, or of another copy).
    expect(kinds(history(undefined, [...without(issued(4)), skipped(issued(4))]))).toEqual([]);
    expect(kinds(history(undefined, [...cleanResults(), skipped(issued(4))]))).toEqual([]);
    expect(kinds(history(undefined, [...without(issued(4)), rejectedWith(issued(4), 'DiscardedByOperator', 'discarded')]))).toEqual([]);
    // A raise skipped at one record and decided from another copy: its events stand.
    expect(kinds(history(undefined, [...cleanResults(), skipped(issued(3))]))).toEqual([]);
    // Beside a skip, any other answer is still the in-order decision's.
    expect(
      check(history(undefined, [...without(issued(4)), skipped(issued(4)), rejectedWith(issued(4), 'InvalidCommand', 'no')])).violations,
    ).toMatchObject([{ kind: 'reaction-decision-mismatch', commandId: issued(4) }]);
    // A raise skipped, no copy decided: the alert's later events say it was.
    const unraised = history([...accountEvents, alertEvents[1]!], [...without(issued(3)), skipped(issued(3))]);
    expect(kinds(unraised)).toContain('reaction-decision-mismatch');
  });

  it('takes a command skipped at one record and decided from another copy as decided after the commands the log shows first', () => {
    // Seed 27747 of every kind. 400 left (raise), 3,000 in (re-arm), 3,000 out (raise again).
    const swings = [
      account(1, 'AccountOpened', { owner: 'Ada' }),
      account(2, 'MoneyDeposited', { amount: 500 }),
      account(3, 'MoneyWithdrawn', { amount: 100 }),
      account(4, 'MoneyDeposited', { amount: 3000 }),
      account(5, 'MoneyWithdrawn', { amount: 3000 }),
    ];
    const skipped = rejectedWith(issued(3), 'SkippedByOperator', 'skipped');
    const raised = event('alert', 1, 'LowBalanceAlertRaised', observation(3, 400), issued(3));
    const results = (rearmedAt: number) => [
      ...swings.map((e) => accepted('account', e.commandId, e.version)),
      skipped,
      accepted('alert', issued(4), rearmedAt),
      accepted('alert', issued(3), 1),
      accepted('alert', issued(4), rearmedAt),
      accepted('alert', issued(5), 1),
    ];
    // The raise's first record skipped: the re-arm was decided before its copy, a no-op on the armed alert at version 0.
    expect(kinds(history([...swings, raised], results(0)))).toEqual([]);
    // A no-op at version 1 was decided after the raise, where it re-arms the alert.
    expect(check(history([...swings, raised], results(1))).violations).toMatchObject([
      { kind: 'reaction-decision-mismatch', commandId: issued(4) },
    ]);
  });

  describe('a command that crossed generations of the commands topic during a grow', () => {
    // The raise for version 4 and the re-arm for 5 decided first; the re-arm for 2 and the raise for 3 after, no-ops on stale source versions.
    const crossedLog = [
      ...accountEvents,
      event('alert', 1, 'LowBalanceAlertRaised', observation(4, 700), issued(4)),
      event('alert', 2, 'LowBalanceAlertRearmed', observation(5, 2700), issued(5)),
    ];
    const crossedResults = [
      ...accountEvents.map((e) => accepted('account', e.commandId, e.version)),
      accepted('alert', issued(4), 1),
      accepted('alert', issued(5), 2),
      accepted('alert', issued(2), 2),
      accepted('alert', issued(3), 2),
    ];
    const crossed = (...versions: number[]) => new Set(versions.map((v) => commandKey('alert', 'a1', issued(v))));

    it('is placed where the log shows it decided: stale to the draining older generation, after newer ones waited for its drain', () => {
      // Seed 520: the commands for 2 and 3 sent to the newest generation, then those for 4 and 5 to the older one, decided first.
      expect(kinds({ ...history(crossedLog, crossedResults), crossed: crossed(4, 5) })).toEqual([]);
      expect(kinds(history(crossedLog, crossedResults))).toEqual(['reaction-decision-mismatch']);
      // Mid-run, before the newest generation decided the commands it holds.
      const early = { ...history(crossedLog.slice(0, 6), crossedResults.slice(0, 6)), crossed: crossed(4) };
      expect(kinds(early, false)).toEqual([]);
      expect(kinds({ ...early, crossed: new Set<string>() }, false)).toEqual(['reaction-decision-mismatch']);
    });

    it('is placed where the log shows it decided: stale to the sealed older generation, forwarded after newer ones', () => {
      // Seed 2523: the commands for 2 and 3 sent to the sealed generation, those for 4 and 5 to the newest; the forwards landed after them.
      expect(kinds({ ...history(crossedLog, crossedResults), crossed: crossed(2, 3) })).toEqual([]);
    });

    it('is still checked against the state where it was decided', () => {
      // The forwarded raise for 3 decided as a raise after the re-arm for 5: its source version is stale, a no-op.
      const raised = event('alert', 3, 'LowBalanceAlertRaised', observation(3, 900), issued(3));
      const results = [...crossedResults.filter((r) => r.commandId !== issued(3)), accepted('alert', issued(3), 3)];
      expect(check({ ...history([...crossedLog, raised], results), crossed: crossed(2, 3) }).violations).toMatchObject([
        { kind: 'reaction-decision-mismatch', commandId: issued(3), versions: [3] },
      ]);
    });
  });

  it('asks no outcome of the commands of an event whose reactions may never have fired', () => {
    const results = cleanResults().filter((r) => r.commandId !== issued(4));
    const unfired = new Set([eventId('account', 'a1', 4)]);
    expect(kinds({ ...history(undefined, results), unfired })).toEqual([]);
    // Answered all the same, its answer is checked.
    const wrong = [...results, rejectedWith(issued(4), 'InvalidCommand', 'no')];
    expect(kinds({ ...history(undefined, wrong), unfired })).toEqual(['reaction-decision-mismatch']);
    expect(kinds(history(undefined, results))).toEqual(['reaction-command-without-outcome']);
  });

  it('checks no reaction when none is given, and says so', () => {
    const report = checkHistory(history(accountEvents, cleanResults()), { aggregates, quiescent: true, acceptsWithoutEvents: ['alert'] });
    expect(report.notes).toContain('reactions not checked: none given');
    expect(report.counts.reactionCommands).toBe(0);
  });
});
