/**
 * POST /commands: the command's envelope and data validated at once by the command side's
 * own decoder (so a 400 carries the code the command side would have given), the record
 * produced (key = aggregateId), then the outcome awaited in the aggregates table. Idempotent
 * by commandId: an outcome already known is answered without sending the command again.
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import { spanOf, TRACEPARENT } from '../core/trace-context.ts';
import { decodeUtf8, type TriggerRecord } from '../core/trigger-event.ts';
import { MAX_COMMAND_BYTES, type ResultRecord } from '../core/wire.ts';
import { decodeCommand } from '../command/decode.ts';
import { bodyBytes, header, isJson, json, preferences, problem, type HttpRequest, type HttpResponse } from './http.ts';
import type { Clock, CommandRef, CommandSender, OutcomeReader, SentRecord } from './ports.ts';
import { waitFor, type Waited, type WaitPolicy } from './wait.ts';

/** How POST waits. */
export interface PostSettings {
  /** How long POST waits for the outcome when the caller does not say (`Prefer: wait=<s>`). */
  readonly waitMs: number;
  /** The longest wait a caller may ask for: below the function's timeout and the front door's. */
  readonly maxWaitMs: number;
  readonly wait: WaitPolicy;
  /** Name of the commands topic, for the record the decoder checks. */
  readonly commandsTopic: string;
}

/** What POST needs. */
export interface PostDeps {
  readonly aggregates: ReadonlyMap<string, AnyAggregate>;
  readonly sender: CommandSender;
  readonly outcomes: OutcomeReader;
  readonly settings: PostSettings;
  readonly clock: Clock;
  readonly newCommandId: () => string;
  readonly onWait?: (waited: { readonly reads: number; readonly waitedMs: number; readonly decided: boolean }) => void;
  /** Told of each failure of Kafka or DynamoDB (the entry logs it). */
  readonly onError?: (error: unknown) => void;
}

/** What the platform tells about one request. */
export interface RequestContext {
  /** Time left before the function is stopped (Lambda's `getRemainingTimeInMillis`); absent: no bound but the settings'. */
  readonly remainingMs?: number;
}

/** Time kept back from the function's remaining time to write the answer, so a wait never runs into the timeout. */
export const ANSWER_MARGIN_MS = 1_000;

/** A string holds a lone surrogate: JSON can carry it, but no store, key or URL can (it is not Unicode text). */
const malformed = (text: string): boolean => /\p{Cs}/u.test(text);

/** 503: Kafka or DynamoDB failed; the commandId to send again, so that a retry is applied at most once. */
export const unavailable = (what: string, error: unknown, commandId: string | undefined): HttpResponse =>
  json(
    503,
    {
      code: 'Unavailable',
      message:
        `${what} (${error instanceof Error ? error.name : 'error'}); send it again` +
        `${commandId === undefined ? '' : ` with "commandId": ${JSON.stringify(commandId)}`}: a command is applied at most once per commandId`,
      ...(commandId === undefined ? {} : { commandId }),
    },
    { 'retry-after': '1' },
  );

const encoder = new TextEncoder();

/**
 * The record value to send: the body as it came, with a `commandId` written in first when
 * the body is a JSON object without one. Anything else is left as it is, for the decoder to
 * reject with the command side's own code and message.
 */
export const withCommandId = (
  text: string,
  newCommandId: () => string,
): { readonly value: Uint8Array; readonly filled: boolean; readonly parsed: unknown } => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { value: encoder.encode(text), filled: false, parsed: undefined };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || Object.hasOwn(parsed, 'commandId'))
    return { value: encoder.encode(text), filled: false, parsed };
  // Textually, not by JSON.stringify: the rest of the bytes stay the caller's, and a deep body cannot overflow the stack here.
  const open = text.indexOf('{');
  const rest = text.slice(open + 1);
  const id = JSON.stringify(newCommandId());
  const value = `${text.slice(0, open)}{"commandId":${id}${rest.trim().startsWith('}') ? '' : ','}${rest}`;
  return { value: encoder.encode(value), filled: true, parsed };
};

/** Where to ask for a command's outcome later. */
export const outcomeLocation = (ref: CommandRef): string =>
  `/commands/${encodeURIComponent(ref.commandId)}?aggregateType=${encodeURIComponent(ref.aggregateType)}&aggregateId=${encodeURIComponent(ref.aggregateId)}`;

/** 202: sent, not decided yet (or not within the wait); where to ask. */
const pending = (ref: CommandRef, sent: { partition: number; offset: number }, applied: string | undefined): HttpResponse => {
  const location = outcomeLocation(ref);
  return json(
    202,
    { ...ref, status: 'pending', location, partition: sent.partition, offset: sent.offset },
    { location, 'retry-after': '1', ...(applied === undefined ? {} : { 'preference-applied': applied }) },
  );
};

/** 200 with the outcome. */
export const decided = (result: ResultRecord, headers: Record<string, string> = {}): HttpResponse => json(200, result, headers);

/** Handles POST /commands, waiting no longer than the function's remaining time allows. */
export const postCommand = async (deps: PostDeps, request: HttpRequest, context: RequestContext = {}): Promise<HttpResponse> => {
  const deadline = deps.clock.now() + (context.remainingMs ?? Infinity) - ANSWER_MARGIN_MS;
  if (!isJson(header(request, 'content-type')))
    return problem(415, 'UnsupportedMediaType', 'send the command as JSON with content-type: application/json');
  const bytes = bodyBytes(request);
  if (bytes.byteLength > MAX_COMMAND_BYTES)
    return problem(413, 'PayloadTooLarge', `command is ${bytes.byteLength} bytes; the limit is ${MAX_COMMAND_BYTES}`);
  const text = decodeUtf8(bytes);
  const { value, filled, parsed } =
    text === undefined ? { value: bytes, filled: false, parsed: undefined } : withCommandId(text, deps.newCommandId);
  const aggregateId = (parsed as { aggregateId?: unknown } | undefined)?.aggregateId;
  const key = typeof aggregateId === 'string' ? aggregateId : undefined;
  const timestamp = deps.clock.now();
  const record: TriggerRecord = {
    topic: deps.settings.commandsTopic,
    partition: -1,
    offset: -1,
    timestamp,
    original: { topic: deps.settings.commandsTopic, partition: -1, offset: -1, timestamp },
    key: key === undefined ? undefined : encoder.encode(key),
    value,
  };
  const decoded = await decodeCommand(record, deps.aggregates);
  if ('bad' in decoded)
    return problem(decoded.bad.reason.code === 'PayloadTooLarge' ? 413 : 400, decoded.bad.reason.code, decoded.bad.reason.message);
  const { envelope, aggregate } = decoded.ok;
  const ref: CommandRef = { aggregateType: aggregate.type, aggregateId: envelope.aggregateId, commandId: envelope.commandId };
  // Checked here, before anything is sent: the API reads the outcome by these ids and names them in its location.
  const unreadable = (['commandId', 'aggregateId'] as const).find((field) => malformed(ref[field]));
  if (unreadable !== undefined)
    return problem(
      400,
      'InvalidCommand',
      `invalid command: ${unreadable}: holds a lone surrogate (not Unicode text), which no key can hold`,
    );

  // A commandId the caller chose may have been decided already: answer with that outcome, send nothing.
  if (!filled) {
    let known: ResultRecord | undefined;
    try {
      known = await deps.outcomes.outcome(ref);
    } catch (error) {
      deps.onError?.(error);
      return unavailable('could not read the aggregates table, and sent nothing', error, ref.commandId);
    }
    if (known !== undefined) return decided(known, { 'idempotent-replayed': 'true' });
  }
  let sent: SentRecord;
  try {
    // The command starts the API's span of the caller's trace (W3C `traceparent`), or a new trace.
    sent = await deps.sender.send({ key: envelope.aggregateId, value, timestamp, traceparent: spanOf(header(request, TRACEPARENT)) });
  } catch (error) {
    // The record may have been written all the same (an acknowledgement lost): a re-send must carry the same commandId.
    deps.onError?.(error);
    return unavailable('could not write the command to the commands topic', error, ref.commandId);
  }
  const prefer = preferences(request);
  if (prefer.respondAsync) return pending(ref, sent, 'respond-async');
  const asked = Math.min(deps.settings.maxWaitMs, prefer.waitSeconds === undefined ? deps.settings.waitMs : prefer.waitSeconds * 1000);
  const timeoutMs = Math.max(0, Math.min(asked, deadline - timestamp));
  const applied = prefer.waitSeconds === undefined ? undefined : `wait=${Math.round(timeoutMs / 1000)}`;
  let waited: Waited<ResultRecord>;
  try {
    waited = await waitFor(
      () => deps.outcomes.outcome(ref, { archivedSince: sent.timestamp }),
      timeoutMs,
      deps.settings.wait,
      deps.clock,
      timestamp,
    );
  } catch (error) {
    // Sent, so the answer is where to ask, not an error a caller would retry into a second command.
    deps.onError?.(error);
    return pending(ref, sent, applied);
  }
  deps.onWait?.({ reads: waited.reads, waitedMs: waited.waitedMs, decided: waited.value !== undefined });
  return waited.value === undefined
    ? pending(ref, sent, applied)
    : decided(waited.value, applied === undefined ? {} : { 'preference-applied': applied });
};
