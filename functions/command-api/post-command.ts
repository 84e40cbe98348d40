/**
 * POST /commands: the command's envelope and data validated at once by the command side's
 * own decoder (so a 400 carries the code the command side would have given), the record
 * produced (key = aggregateId), then the outcome awaited in the aggregates table. Idempotent
 * by commandId: an outcome already known is answered without sending the command again.
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import { spanOf, TRACEPARENT } from '../core/trace-context.ts';
import { decodeUtf8, type TriggerRecord } from '../core/trigger-event.ts';
import { MAX_COMMAND_BYTES, type CommandEnvelope, type ResultRecord } from '../core/wire.ts';
import { decodeCommand } from '../command/decode.ts';
import { bodyBytes, header, isJson, json, preferences, problem, type HttpRequest, type HttpResponse } from './http.ts';
import type { Claim, Clock, CommandClaims, CommandRef, CommandSender, OutcomeReader, SentRecord } from './ports.ts';
import { waitFor, type Waited, type WaitPolicy } from './wait.ts';
import { KafkaAggregatesError } from '../core/errors.ts';

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
  /** What each caller-chosen commandId was first sent with (absent: a reused commandId is not checked). */
  readonly claims?: CommandClaims;
}

/** What the platform tells about one request. */
export interface RequestContext {
  /** Time left before the function is stopped (Lambda's `getRemainingTimeInMillis`); absent: no bound but the settings'. */
  readonly remainingMs?: number;
  /** The span the command record carries (W3C `traceparent`); absent: a span of the request's `traceparent` header's trace, or of a new trace. */
  readonly traceparent?: string;
}

/** Time kept back from the function's remaining time to write the answer, so a wait never runs into the timeout. */
export const ANSWER_MARGIN_MS = 1_000;

/** A produce that did not finish within the function's remaining time. */
class TimeoutError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'TimeoutError';
}

/**
 * `work`'s result, or a TimeoutError once `ms` have passed (not before the work settles when
 * `ms` is infinite). Work that finishes late is left to finish; its failure goes to `onError`.
 */
const within = async <T>(work: Promise<T>, ms: number, onError?: (error: unknown) => void): Promise<T> => {
  if (ms === Infinity) return work;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      work.catch((error: unknown) => onError?.(error));
      reject(new TimeoutError(`not done within ${Math.round(ms)} ms`));
    }, ms);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
};

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

/** JSON with every object's keys in order: the same content gives the same text whatever order it was written in. */
const canonical = (value: unknown): string =>
  Array.isArray(value)
    ? `[${value.map(canonical).join(',')}]`
    : typeof value === 'object' && value !== null
      ? `{${Object.keys(value)
          .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
          .join(',')}}`
      : JSON.stringify(value);

/** SHA-256 (base64url) of a command's content: everything but its commandId, canonically. */
export const digestOf = async (envelope: CommandEnvelope): Promise<string> => {
  const hash = await crypto.subtle.digest('SHA-256', encoder.encode(canonical({ ...envelope, commandId: undefined })));
  return Buffer.from(hash).toString('base64url');
};

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

  // A commandId the caller chose may have been decided already: answer with that outcome, send nothing.
  if (!filled) {
    let known: ResultRecord | undefined;
    try {
      // The same commandId with other content is another command: refused, never answered with the first one's outcome.
      const claim: Claim = { digest: await digestOf(envelope), type: envelope.type, at: timestamp };
      const first = await deps.claims?.claim(ref, claim);
      if (first !== undefined && first.digest !== claim.digest)
        return problem(
          409,
          'CommandIdReused',
          `commandId ${JSON.stringify(ref.commandId)} was sent for ${ref.aggregateType} ${JSON.stringify(ref.aggregateId)} at ` +
            `${new Date(first.at).toISOString()} as a ${first.type} with other content (digest ${first.digest.slice(0, 16)}…); ` +
            'an identical repeat is answered with its outcome: send a different command with a new commandId',
        );
      known = await deps.outcomes.outcome(ref);
    } catch (error) {
      deps.onError?.(error);
      return unavailable('could not read the aggregates table, and sent nothing', error, ref.commandId);
    }
    if (known !== undefined) return decided(known, { 'idempotent-replayed': 'true' });
  }
  // The produce, like the wait, ends before the function is stopped: the caller gets the commandId to send again.
  const budgetMs = deadline - deps.clock.now();
  if (budgetMs <= 0)
    return unavailable('no time was left to write the command to the commands topic; sent nothing', new TimeoutError(), ref.commandId);
  let sent: SentRecord;
  try {
    // The command starts the API's span of the caller's trace (W3C `traceparent`), or a new trace.
    const traceparent = context.traceparent ?? spanOf(header(request, TRACEPARENT));
    sent = await within(deps.sender.send({ key: envelope.aggregateId, value, timestamp, traceparent }), budgetMs, deps.onError);
  } catch (error) {
    // The record may have been written all the same (an acknowledgement lost, or late): a re-send must carry the same commandId.
    deps.onError?.(error);
    const late = error instanceof TimeoutError ? " within the function's remaining time" : '';
    return unavailable(`could not write the command to the commands topic${late}`, error, ref.commandId);
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
