/**
 * One command followed end to end, from what the topics and the read models hold: the
 * command record, its result, its events with their offsets, the read-model items each event
 * reached, and the commands those events caused (reactions' commands, `causationId` = the
 * event's id), each followed the same way. Pure: `kafka-aggregates trace` does the reads.
 */
import { parseTraceparent } from '../../functions/core/trace-context.ts';
import type { EventRecord, ResultRecord } from '../../functions/core/wire.ts';

/** A record's place in its topic. */
export interface Place {
  /** Its topic when it is a later generation's (core/generations.ts); the first generation's otherwise. */
  readonly topic?: string;
  readonly partition: number;
  readonly offset: number;
}

/** A command record as the commands topic holds it. */
export interface TracedCommand {
  readonly commandId: string;
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly type: string;
  readonly correlationId?: string;
  readonly causationId?: string;
  readonly place: Place;
  /** Its `traceparent` header, when it has one. */
  readonly traceparent?: string;
}

/** A result record, with its `traceparent` header when it has one. */
export type TracedResult = ResultRecord & { readonly traceparent?: string };

/** A read-model item an event reaches: a projection's row or a reaction's checkpoint, and whether it has applied the event. */
export interface TracedItem {
  readonly kind: 'projection' | 'reaction';
  readonly name: string;
  /** The row id, or the aggregate the checkpoint follows. */
  readonly item: string;
  readonly applied: boolean;
}

/** An event of the command, where it is, and the items it reached. */
export interface TracedEvent {
  readonly event: EventRecord;
  readonly place: Place;
  /** Its `traceparent` header, when it has one. */
  readonly traceparent?: string;
  readonly items: readonly TracedItem[];
}

/** One command of the chain. */
export interface TraceNode {
  readonly commandId: string;
  /** Absent when the commands topic no longer holds it (retention) or never did. */
  readonly command?: TracedCommand;
  /** Every result published for it (a redelivery publishes the same again); the first is what it came to. */
  readonly results: readonly TracedResult[];
  readonly events: readonly TracedEvent[];
  /** Commands its events caused. */
  readonly caused: readonly TraceNode[];
}

/** What the topics hold, read once. */
export interface TraceLog {
  readonly commands: readonly TracedCommand[];
  readonly results: readonly TracedResult[];
  readonly events: readonly { readonly event: EventRecord; readonly place: Place; readonly traceparent?: string }[];
}

/**
 * Follows `commandId` through `log`. Events are deduplicated by version (a re-published
 * outbox repeats them); `itemsOf` says which items an event reached. `maxDepth` bounds the
 * causal chain (a reaction loop).
 */
export const traceCommand = (
  commandId: string,
  log: TraceLog,
  itemsOf: (event: EventRecord, place: Place) => readonly TracedItem[],
  maxDepth = 16,
): TraceNode => {
  const follow = (id: string, depth: number, seen: ReadonlySet<string>): TraceNode => {
    const command = log.commands.find((c) => c.commandId === id);
    const results = log.results.filter((r) => r.commandId === id);
    const byVersion = new Map<string, { event: EventRecord; place: Place; traceparent?: string }>();
    for (const e of log.events) {
      if (e.event.commandId !== id || (command !== undefined && e.event.aggregateId !== command.aggregateId)) continue;
      const key = `${e.event.aggregateType}#${e.event.aggregateId}#${e.event.version}`;
      if (!byVersion.has(key)) byVersion.set(key, e);
    }
    const events = [...byVersion.values()]
      .sort((a, b) => a.event.version - b.event.version)
      .map(({ event, place, traceparent }) => ({
        event,
        place,
        ...(traceparent === undefined ? {} : { traceparent }),
        items: itemsOf(event, place),
      }));
    const eventIds = new Set(events.map((e) => e.event.eventId));
    const causedIds =
      depth >= maxDepth
        ? []
        : [
            ...new Set(log.commands.filter((c) => c.causationId !== undefined && eventIds.has(c.causationId)).map((c) => c.commandId)),
          ].filter((c) => !seen.has(c));
    const next = new Set([...seen, id]);
    return {
      commandId: id,
      ...(command === undefined ? {} : { command }),
      results,
      events,
      caused: causedIds.map((c) => follow(c, depth + 1, next)),
    };
  };
  return follow(commandId, 0, new Set());
};

const outcome = (result: ResultRecord | undefined): string =>
  result === undefined
    ? 'no result on the results topic (not decided yet, or the topic no longer holds it)'
    : result.status === 'accepted'
      ? `accepted, version ${result.version}`
      : `rejected ${result.reason.code}: ${result.reason.message}`;

/**
 * A record's place in its trace: the trace id where it differs from the enclosing one
 * (`trace`), and the record's own span, whose parent is the record the line sits under.
 */
const spanText = (traceparent: string | undefined, trace: string | undefined): string => {
  const context = parseTraceparent(traceparent);
  if (context === undefined) return '';
  return `${context.traceId === trace ? '' : `  trace ${context.traceId}`}  span ${context.parentId}`;
};

/**
 * The chain as indented lines, one per command, result, event and item. A line shows its
 * record's span (its `traceparent`), and the trace id where the trace changes: at the first
 * command, and wherever a record is in another trace than the command above it.
 */
export const formatTrace = (
  node: TraceNode,
  topics: { readonly commands: string; readonly events: string },
  indent = '',
  trace?: string,
): string[] => {
  const c = node.command;
  const own = parseTraceparent(c?.traceparent)?.traceId ?? trace;
  const result = node.results[0];
  const lines = [
    c === undefined
      ? `${indent}command ${node.commandId} (not on ${topics.commands})`
      : `${indent}command ${c.commandId}  ${c.aggregateType} ${c.aggregateId} ${c.type}  ${c.place.topic ?? topics.commands}-${c.place.partition}@${c.place.offset}` +
        `${c.correlationId === undefined ? '' : `  correlation ${c.correlationId}`}${c.causationId === undefined ? '' : `  caused by ${c.causationId}`}` +
        spanText(c.traceparent, trace),
    `${indent}  result  ${outcome(result)}${spanText(result?.traceparent, own)}`,
  ];
  for (const e of node.events) {
    lines.push(
      `${indent}  event   ${e.event.eventId} ${e.event.type}  ${e.place.topic ?? topics.events}-${e.place.partition}@${e.place.offset}${spanText(e.traceparent, own)}`,
    );
    for (const item of e.items)
      lines.push(`${indent}    ${item.kind.padEnd(10)} ${item.name} ${item.item}: ${item.applied ? 'applied' : 'not applied yet'}`);
  }
  for (const caused of node.caused) lines.push(...formatTrace(caused, topics, `${indent}    `, own));
  return lines;
};
