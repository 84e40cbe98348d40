/**
 * Decides one command against a state: the aggregate's decide, each event made exactly what
 * the log will hold (a JSON round trip, then its schema), then evolve on that. What is
 * decided is what every reader of the events topic replays; an event that would not survive
 * the trip is the command's failure (DecideFailed), never a surprise for the rebuild.
 */
import { isRejection, type AnyAggregate, type Message } from '../core/aggregate.ts';
import { describeIssues } from '../core/schema.ts';
import { currentRevision } from '../core/upcast.ts';
import { correlationOf, eventId, type EventRecord, type Reason } from '../core/wire.ts';
import type { IncomingCommand } from './decode.ts';

/** A command's decision: its events and the state they lead to, or why not (`deadLetter` when the aggregate broke, not a rule). */
export type Decided =
  { readonly events: EventRecord[]; readonly state: unknown } | { readonly reason: Reason; readonly deadLetter: boolean };

/** The event record of `event`, decided for `incoming` at `version`, at the command record's time and its type's current revision. */
export const eventRecord = (incoming: IncomingCommand, event: Message, version: number, incarnation = 1): EventRecord => {
  const { envelope, record } = incoming;
  return {
    eventId: eventId(envelope.aggregateType, envelope.aggregateId, version),
    aggregateType: envelope.aggregateType,
    aggregateId: envelope.aggregateId,
    version,
    type: event.type,
    revision: currentRevision(incoming.aggregate, event.type),
    data: event.data,
    commandId: envelope.commandId,
    correlationId: correlationOf(envelope),
    occurredAt: new Date(record.timestamp).toISOString(),
    ...(envelope.metadata === undefined ? {} : { metadata: envelope.metadata }),
    source: { topic: record.topic, partition: record.partition, offset: record.offset, ...(incarnation > 1 ? { incarnation } : {}) },
  };
};

/** Why an event cannot go to the log as decided, or undefined when it can. */
export const eventFault = (aggregate: AnyAggregate, event: Message, asStored: unknown): string | undefined => {
  const schemas = aggregate.events as Readonly<Record<string, (typeof aggregate.events)[string]>>;
  const schema = Object.hasOwn(schemas, event.type) ? schemas[event.type] : undefined;
  if (schema === undefined)
    return `it returned an event of unknown type ${JSON.stringify(event.type)}; known: ${Object.keys(schemas).join(', ')}`;
  const validated = schema['~standard'].validate(asStored);
  if (validated instanceof Promise) return `the schema of ${event.type} is asynchronous; event schemas must validate synchronously`;
  if (validated.issues !== undefined)
    return `its ${event.type} event is not valid as the log stores it (JSON): ${describeIssues(validated.issues)}`;
  return undefined;
};

/** Decides `incoming` (from the `incarnation` of its topic) against `state` at `version`. Never throws for the aggregate's faults. */
export const decideOne = (incoming: IncomingCommand, state: unknown, version: number, incarnation = 1): Decided => {
  const { aggregate, envelope, record } = incoming;
  const failed = (message: string): Decided => ({
    reason: { code: 'DecideFailed', message: `${aggregate.type}.${message}` },
    deadLetter: true,
  });
  if (envelope.expectedVersion !== undefined && envelope.expectedVersion !== version)
    return {
      reason: {
        code: 'VersionMismatch',
        message: `expected version ${envelope.expectedVersion}, but ${aggregate.type} ${envelope.aggregateId} is at version ${version}`,
      },
      deadLetter: false,
    };
  try {
    const decision = aggregate.decide(incoming.command, state, {
      aggregateId: envelope.aggregateId,
      version,
      commandId: envelope.commandId,
      now: new Date(record.timestamp),
    });
    if (isRejection(decision)) return { reason: { code: decision.code, message: decision.message }, deadLetter: false };
    let next = state;
    const events: EventRecord[] = [];
    for (const event of decision as readonly Message[]) {
      let stored: unknown;
      try {
        stored = JSON.parse(JSON.stringify(event.data ?? null)) as unknown;
      } catch (error) {
        return failed(`decide returned an event whose data is not JSON: ${(error as Error).message}`);
      }
      const fault = eventFault(aggregate, event, stored);
      if (fault !== undefined) return failed(`decide: ${fault}`);
      const asStored: Message = { type: event.type, data: stored };
      next = aggregate.evolve(next, asStored);
      events.push(eventRecord(incoming, asStored, version + events.length + 1, incarnation));
    }
    return { events, state: next };
  } catch (error) {
    return failed(`decide or evolve threw: ${(error as Error).message}`);
  }
};
