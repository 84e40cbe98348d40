/** Requests to the command API in payload format 2.0, and fakes of its ports for unit tests. */
import type { CommandRef, Clock, OutcomeReader } from '../../functions/command-api/ports.ts';
import type { HttpRequest } from '../../functions/command-api/http.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';

/** A request as API Gateway or the local server delivers it. */
export const request = (method: string, path: string, options: { body?: string; headers?: Record<string, string> } = {}): HttpRequest => {
  const [rawPath = '', rawQueryString = ''] = path.split('?');
  return {
    rawPath,
    rawQueryString,
    headers: { 'content-type': 'application/json', ...options.headers },
    ...(options.body === undefined ? {} : { body: options.body }),
    isBase64Encoded: false,
    requestContext: { http: { method } },
  };
};

/** A clock that moves only when slept on, recording when each sleep ended. */
export const fakeClock = (start = 1_000_000): Clock & { readonly woke: number[] } => {
  let now = start;
  const woke: number[] = [];
  return {
    woke,
    now: () => now,
    sleep: (ms) => {
      now += ms;
      woke.push(now - start);
      return Promise.resolve();
    },
  };
};

/** Outcomes kept in memory; `decideAfterReads` makes an outcome appear only at the n-th read of it. */
export const memoryOutcomes = () => {
  const outcomes = new Map<string, { result: ResultRecord; visibleFromRead: number }>();
  const reads = new Map<string, number>();
  const states = new Map<string, { version: number; state: unknown }>();
  const key = (ref: CommandRef) => JSON.stringify([ref.aggregateType, ref.aggregateId, ref.commandId]);
  const reader: OutcomeReader & {
    decide(ref: CommandRef, result: ResultRecord, decideAfterReads?: number): void;
    setState(type: string, id: string, state: { version: number; state: unknown }): void;
    readsOf(ref: CommandRef): number;
    failing: boolean;
  } = {
    failing: false,
    outcome(ref) {
      if (reader.failing) return Promise.reject(new Error('DynamoDB is unreachable'));
      const n = (reads.get(key(ref)) ?? 0) + 1;
      reads.set(key(ref), n);
      const found = outcomes.get(key(ref));
      return Promise.resolve(found !== undefined && n >= found.visibleFromRead ? found.result : undefined);
    },
    state: (type, id) => Promise.resolve(states.get(`${type}#${id}`)),
    decide: (ref, result, decideAfterReads = 0) => void outcomes.set(key(ref), { result, visibleFromRead: decideAfterReads + 1 }),
    setState: (type, id, state) => void states.set(`${type}#${id}`, state),
    readsOf: (ref) => reads.get(key(ref)) ?? 0,
  };
  return reader;
};
