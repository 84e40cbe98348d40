/**
 * The reaction definition API: events that issue commands (the feedback loop from the events
 * topic back to the commands topic). Pure: `react` folds a small per-aggregate state and
 * returns the commands to issue; the framework derives each command's id from the event, so a
 * redelivered event re-issues the same commandIds, which the command side deduplicates.
 */
import type { AggregateDefinition, Message } from './aggregate.ts';
import { correlationOf, type CommandEnvelope } from './wire.ts';
import type { Consumes, DomainEvent, GapPolicy } from './projection.ts';

/** A command a reaction issues, addressed to an aggregate; the framework adds its id. */
export interface ReactionCommand {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly type: string;
  readonly data: Readonly<Record<string, unknown>>;
  readonly metadata?: Readonly<Record<string, unknown>>;
}

/** What `react` returns: the next state and the commands the event causes (possibly none). */
export interface Reacted<S> {
  readonly state: S;
  readonly commands: readonly ReactionCommand[];
}

/** Everything the framework needs to run one reaction. */
export interface ReactionDefinition<S, E extends Message> {
  /** Unique name; part of every commandId the reaction issues, so never rename a live one. */
  readonly name: string;
  /**
   * Aggregate types and the event types that reach `react`. Every event of a listed
   * aggregate type advances the reaction's checkpoint, so unlisted event types never look
   * like gaps.
   */
  readonly consumes: Consumes<E>;
  /** State per source aggregate before its first event. Must be JSON-serialisable. */
  readonly initialState: S;
  /** Folds one event; must be deterministic, since a redelivery must issue the same commands. */
  readonly react: (state: S, event: DomainEvent<E>) => Reacted<S>;
  /**
   * Gap policy on the per-aggregate checkpoint (see GapPolicy).
   * @default 'halt'
   */
  readonly onGap?: GapPolicy;
}

/** A reaction definition with its types erased, as the runtime holds it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- variance: the runtime only passes events it validated against the aggregate's own schemas
export type AnyReaction = ReactionDefinition<any, any>;

/** Declares a reaction; an identity function that lets TypeScript infer and check it. */
export const defineReaction = <S, E extends Message>(definition: ReactionDefinition<S, E>): ReactionDefinition<S, E> => definition;

/** A command to `aggregate`, type-checked against its command union. */
export const commandTo = <C extends Message>(
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- only the command union matters here
  aggregate: AggregateDefinition<any, C, any>,
  aggregateId: string,
  command: C & { readonly data: Readonly<Record<string, unknown>> },
): ReactionCommand => ({ aggregateType: aggregate.type, aggregateId, type: command.type, data: command.data });

/** The id of the `n`th command (from 0) that `reaction` issues for the event `eventId`. */
export const reactionCommandId = (reaction: string, eventId: string, n: number): string => `${reaction}:${eventId}:${n}`;

/**
 * The command record of the `n`th command a reaction issued for `event`: a deterministic
 * commandId, caused by the event (`causationId` = its eventId) and in the event's business
 * transaction (`correlationId` carried over from the event, else from its command); the
 * reaction's name in `metadata`.
 */
export const reactionCommandEnvelope = (reaction: string, event: DomainEvent, command: ReactionCommand, n: number): CommandEnvelope => ({
  commandId: reactionCommandId(reaction, event.eventId, n),
  aggregateType: command.aggregateType,
  aggregateId: command.aggregateId,
  type: command.type,
  data: { ...command.data },
  correlationId:
    event.correlationId ??
    correlationOf({ commandId: event.commandId, ...(event.metadata === undefined ? {} : { metadata: event.metadata }) }),
  causationId: event.eventId,
  metadata: { ...command.metadata, reaction },
});
