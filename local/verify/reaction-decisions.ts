/**
 * What the reaction check expects of one command's results: the in-order decision of the command
 * by its target aggregate, as the command side decides it, and the answer each result should give.
 */
import { isRejection, type AnyAggregate, type Message } from '../../functions/core/aggregate.ts';
import { DISCARDED_BY_OPERATOR, SKIPPED_BY_OPERATOR } from '../../functions/core/release.ts';
import type { CommandEnvelope, ResultRecord } from '../../functions/core/wire.ts';

/** What the in-order decision of one command is: its events, accepted without events, or a rejection. */
export type Decision = { readonly events: Message[] } | { readonly code: string };

/** `aggregate`'s decision of `command` against `state` at `version`, as the command side decides it (command/decide-one.ts). */
export const decideAt = (aggregate: AnyAggregate, command: CommandEnvelope, state: unknown, version: number, now: string): Decision => {
  const schemas = aggregate.commands as Readonly<Record<string, (typeof aggregate.commands)[string]>>;
  const validated = Object.hasOwn(schemas, command.type) ? schemas[command.type]?.['~standard'].validate(command.data) : undefined;
  if (validated === undefined) return { code: 'UnknownCommandType' };
  if (validated instanceof Promise || validated.issues !== undefined) return { code: 'InvalidCommand' };
  try {
    const context = { aggregateId: command.aggregateId, version, commandId: command.commandId, now: new Date(now) };
    const decision = aggregate.decide({ type: command.type, data: validated.value as unknown }, state, context);
    if (isRejection(decision)) return { code: decision.code };
    return {
      events: (decision as readonly Message[]).map((e) => ({ type: e.type, data: JSON.parse(JSON.stringify(e.data ?? null)) as unknown })),
    };
  } catch {
    return { code: 'DecideFailed' };
  }
};

/** The answer the decision gives when `result` is not it, or undefined when it is (OutcomeNotRetained stands for an outcome a restored or rebuilt head no longer keeps). */
const expectedAnswer = (decision: Decision, lastVersion: number, result: ResultRecord): string | undefined => {
  const notRetained = result.status === 'rejected' && result.reason.code === 'OutcomeNotRetained';
  if ('code' in decision)
    return (result.status === 'rejected' && result.reason.code === decision.code) || notRetained ? undefined : `rejected ${decision.code}`;
  if (decision.events.length === 0) return result.status === 'accepted' || notRetained ? undefined : 'accepted without events';
  return result.status === 'accepted' && result.version === lastVersion ? undefined : `accepted at version ${lastVersion}`;
};

/** The code of an operator's skip or discard of one record of the command, or undefined. */
export const passCode = (result: ResultRecord): string | undefined =>
  result.status === 'rejected' && (result.reason.code === SKIPPED_BY_OPERATOR || result.reason.code === DISCARDED_BY_OPERATOR)
    ? result.reason.code
    : undefined;

/** As expectedAnswer, beside an operator's pass of a record of the command; `passed`: its code when no copy was decided. */
export const expectedOf = (
  decision: Decision,
  lastVersion: number,
  result: ResultRecord,
  passed: string | undefined,
): string | undefined => {
  if (passCode(result) !== undefined) return undefined;
  if (passed !== undefined && 'events' in decision && decision.events.length > 0) return `rejected ${passed}`;
  return expectedAnswer(decision, lastVersion, result);
};

export const answerOf = (result: ResultRecord): string =>
  result.status === 'accepted' ? `accepted at version ${result.version}` : `${result.status} ${result.reason.code}`;
