/**
 * The in-order decision: what every command's outcome must be. Each aggregate's commands
 * are decided, as the command side must, in the order the commands topic holds them (life
 * after life; of a dead life only what its trigger had committed, since the client sends the
 * rest again), with the command side's own decoding and `decideOne`, against a model that
 * only these decisions move. A commandId accepted answers again with that result (without
 * events too: the head remembers it, command/outcome.ts); a rejection is decided again (also
 * one of a dead life's record past its committed offset, which the client sent again: the old
 * life may have rejected it first). A record an operator skipped (its SkippedByOperator
 * dead letter) is rejected so and changes nothing (a decision of it that changed nothing, made
 * before the release was recorded, may stand beside). Every result on the results topic must be
 * one of its command's decided outcomes, and every decided command must have a result.
 */
import { aggregateKey, type AnyAggregate } from '../functions/core/aggregate.ts';
import { decodeCommand } from '../functions/command/decode.ts';
import { decideOne } from '../functions/command/decide-one.ts';
import type { StoredRecord } from '../functions/adapters/memory/cluster.ts';
import { triggerRecordOf } from '../functions/core/trigger-event.ts';
import { registry } from '../functions/core/registry.ts';
import type { ResultRecord } from '../functions/core/wire.ts';
import { DISCARDED_BY_OPERATOR } from '../functions/park/parked.ts';
import { matches, type Expected } from '../chaos/workload.ts';

/** A command record to decide, in the order the command side must. */
export interface OrderedCommand {
  readonly topic: string;
  readonly record: StoredRecord;
  /** An operator skipped it (its dead letter says so). */
  readonly skipped: boolean;
  /**
   * An operator discarded it from its aggregate's parked sequence (its dead letter says so): of
   * no effect; a rejection decided before the park may stand beside it.
   */
  readonly discarded?: boolean;
  /**
   * A record of a dead life past what its trigger committed and its events show decided: the
   * client sent it again, but a batch may have rejected it first (a rejection leaves no event).
   */
  readonly unsure?: boolean;
}

/** A result that is not a decided outcome, or a decided command without a result. */
export interface OutcomeMismatch {
  readonly commandId: string;
  readonly expected: readonly Expected[];
  readonly actual: readonly ResultRecord[];
}

interface Model {
  state: unknown;
  version: number;
  readonly accepted: Map<string, Expected>;
}

/** Decides `commands` in order; returns each commandId's outcomes, and whether a no-event acceptance may answer at any version. */
export const decideInOrder = async (
  commands: readonly OrderedCommand[],
  aggregates: readonly AnyAggregate[],
): Promise<Map<string, { expected: Expected[]; anyVersion: boolean }>> => {
  const known = registry(aggregates);
  const models = new Map<string, Model>();
  const out = new Map<string, { expected: Expected[]; anyVersion: boolean }>();
  const add = (commandId: string, expected: Expected, anyVersion = false) => {
    const entry = out.get(commandId) ?? { expected: [], anyVersion: false };
    entry.expected.push(expected);
    entry.anyVersion ||= anyVersion;
    out.set(commandId, entry);
  };
  for (const { topic, record, skipped, discarded = false, unsure = false } of commands) {
    const decoded = await decodeCommand(triggerRecordOf(topic, record), known);
    if ('bad' in decoded) {
      // Skipped, it may have been rejected too, by a batch before the release was recorded.
      if (decoded.bad.commandId !== null) {
        add(decoded.bad.commandId, { status: 'rejected', code: decoded.bad.reason.code });
        if (skipped) add(decoded.bad.commandId, { status: 'rejected', code: 'SkippedByOperator' });
      }
      continue;
    }
    const { envelope, aggregate } = decoded.ok;
    const key = aggregateKey(aggregate.type, envelope.aggregateId);
    let model = models.get(key);
    if (model === undefined) models.set(key, (model = { state: aggregate.initialState, version: 0, accepted: new Map() }));
    const earlier = model.accepted.get(envelope.commandId);
    if (unsure) {
      // Decided, it changed nothing: an acceptance with events would lie within the decided part.
      const decided = earlier === undefined ? decideOne(decoded.ok, model.state, model.version) : undefined;
      if (decided !== undefined && 'reason' in decided) add(envelope.commandId, { status: 'rejected', code: decided.reason.code });
    } else if (earlier !== undefined) add(envelope.commandId, earlier);
    else if (discarded) {
      add(envelope.commandId, { status: 'rejected', code: DISCARDED_BY_OPERATOR });
      // Decided before its aggregate parked on it (the trigger had not committed it), it was
      // parked when delivered again under code that fails on it: a rejection is decided again,
      // identical only while the code is (docs/DESIGN.md), so one may stand beside the discard.
      const decided = decideOne(decoded.ok, model.state, model.version);
      if ('reason' in decided) add(envelope.commandId, { status: 'rejected', code: decided.reason.code });
    } else if (skipped) {
      add(envelope.commandId, { status: 'rejected', code: 'SkippedByOperator' });
      // A batch may have decided it before the release was recorded (the trigger had not
      // committed it): a decision that changed nothing may stand beside the skip.
      const decided = decideOne(decoded.ok, model.state, model.version);
      if ('reason' in decided) add(envelope.commandId, { status: 'rejected', code: decided.reason.code });
      else if (decided.events.length === 0) add(envelope.commandId, { status: 'accepted', version: model.version }, true);
    } else {
      const decided = decideOne(decoded.ok, model.state, model.version);
      if ('reason' in decided) add(envelope.commandId, { status: 'rejected', code: decided.reason.code });
      else {
        model.state = decided.state;
        model.version += decided.events.length;
        const expected: Expected = { status: 'accepted', version: model.version };
        add(envelope.commandId, expected, decided.events.length === 0);
        model.accepted.set(envelope.commandId, expected);
      }
    }
  }
  return out;
};

/**
 * Compares the results with the decided outcomes. `forgotten`: the table was restored or
 * copied, so an acceptance that changed nothing, which only the results topic records, may be
 * answered `OutcomeNotRetained` when delivered again.
 */
export const compareWithDecisions = (
  decided: ReadonlyMap<string, { expected: Expected[]; anyVersion: boolean }>,
  results: ReadonlyMap<string, readonly ResultRecord[]>,
  forgotten = false,
): OutcomeMismatch[] => {
  const mismatches: OutcomeMismatch[] = [];
  for (const [commandId, { expected, anyVersion }] of decided) {
    const actual = results.get(commandId) ?? [];
    const ok = (e: Expected, r: ResultRecord) =>
      matches(e, r) ||
      (anyVersion && e.status === 'accepted' && (r.status === 'accepted' || (forgotten && r.reason.code === 'OutcomeNotRetained')));
    // A `parked` result is not an outcome: the final one follows the release or the discard.
    const final = actual.filter((r) => r.status !== 'parked');
    const fine = final.length > 0 && final.every((r) => expected.some((e) => ok(e, r)));
    if (!fine) mismatches.push({ commandId, expected, actual });
  }
  for (const [commandId, actual] of results) if (!decided.has(commandId)) mismatches.push({ commandId, expected: [], actual });
  return mismatches;
};
