/**
 * W3C trace context (https://www.w3.org/TR/trace-context/) in Kafka headers: a command carries
 * a `traceparent` header (the edge starts a trace when the caller gave none), and everything it
 * causes, its events and result and the commands reactions issue for those events, carries the
 * same trace id under a span of its own. The handlers write the trace ids of a batch in every
 * log line. Pure: parsing, formatting and reading the trigger's headers.
 */
import type { MskEvent, MskRecord } from './trigger-event.ts';

/** The header's name, as W3C's Kafka binding and OpenTelemetry's propagators spell it. */
export const TRACEPARENT = 'traceparent';

/** A parsed `traceparent`: version 00's fields. */
export interface TraceContext {
  /** 32 lowercase hex digits, not all zero. */
  readonly traceId: string;
  /** The caller's span: 16 lowercase hex digits, not all zero. */
  readonly parentId: string;
  /** 2 hex digits; `01`: sampled. */
  readonly flags: string;
}

const FORMAT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * The trace context of a `traceparent` value, or undefined when it is not one (W3C: such a
 * header is ignored and a new trace starts). A version above 00 is read as 00 when its first
 * fields are, as the specification asks; version ff is invalid.
 */
export const parseTraceparent = (value: string | undefined): TraceContext | undefined => {
  const match = value === undefined ? null : FORMAT.exec(value.trim());
  if (match === null) return undefined;
  const [, version, traceId, parentId, flags, rest] = match;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (traceId === undefined || parentId === undefined || flags === undefined) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(parentId)) return undefined;
  return { traceId, parentId, flags };
};

const randomHex = (bytes: number): string => {
  for (;;) {
    const hex = [...globalThis.crypto.getRandomValues(new Uint8Array(bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');
    if (!/^0+$/.test(hex)) return hex;
  }
};

/** The `traceparent` of a new span: in the trace of `parent` when that is a valid one, else in a new, sampled trace. */
export const spanOf = (parent?: string): string => {
  const context = parseTraceparent(parent);
  return `00-${context?.traceId ?? randomHex(16)}-${randomHex(8)}-${context?.flags ?? '01'}`;
};

/** The trace id of a `traceparent` value, or undefined when it is not one. */
export const traceIdOf = (traceparent: string | undefined): string | undefined => parseTraceparent(traceparent)?.traceId;

/**
 * A record's `traceparent` header, as the trigger delivers headers (`[{name: [byte, …]}]`), or
 * undefined when it has none or none that is valid.
 */
export const traceparentOf = (record: Pick<MskRecord, 'headers'>): string | undefined => {
  if (!Array.isArray(record.headers)) return undefined;
  for (const header of record.headers as unknown[]) {
    if (typeof header !== 'object' || header === null) continue;
    const bytes = (header as Record<string, unknown>)[TRACEPARENT];
    if (!Array.isArray(bytes) || bytes.length > 256 || !bytes.every((b) => Number.isInteger(b) && b >= 0 && b < 128)) continue;
    const value = String.fromCharCode(...(bytes as number[]));
    if (parseTraceparent(value) !== undefined) return value;
  }
  return undefined;
};

/** The `traceparent` of each item whose record has one, by the item's id (a commandId, an eventId). */
export const tracesOf = <T>(
  items: Iterable<T>,
  id: (item: T) => string,
  record: (item: T) => Pick<MskRecord, 'headers'> | undefined,
): Map<string, string> => {
  const traces = new Map<string, string>();
  for (const item of items) {
    const at = record(item);
    const traceparent = at === undefined ? undefined : traceparentOf(at);
    if (traceparent !== undefined) traces.set(id(item), traceparent);
  }
  return traces;
};

/** The distinct trace ids of a trigger event's records, in the order first met: what every log line of its invocation carries. */
export const traceIdsOf = (event: MskEvent): string[] => [
  ...new Set(
    Object.values(event.records).flatMap((records) =>
      records.flatMap((r) => {
        const id = traceIdOf(traceparentOf(r));
        return id === undefined ? [] : [id];
      }),
    ),
  ),
];
