/**
 * Where an in-memory port lets a scheduler in: every operation that would be one request to
 * DynamoDB or Kafka awaits `point(op)` before it takes effect, and the fate the scheduler gives
 * decides what happens: it takes effect, it fails before taking effect, or it takes effect and
 * then fails (a timeout whose request landed). A point that never resolves is a crash of the
 * caller. Without a scheduler every operation goes through at once (`immediate`).
 */
import { KafkaAggregatesError } from '../../core/errors.ts';

/** What becomes of one operation. */
export type Fate = 'ok' | 'fail-before' | 'fail-after';

/** The scheduler's hook: resolves when the operation may go on, with its fate. */
export interface Interleaver {
  point(op: string): Promise<Fate>;
}

/** No scheduler: every operation goes through at once. */
export const immediate: Interleaver = { point: () => Promise.resolve('ok') };

/** An injected infrastructure failure: the request timed out, before or after it took effect. */
export class InjectedTimeoutError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'InjectedTimeoutError';
  constructor(
    readonly op: string,
    readonly tookEffect: boolean,
  ) {
    super(`injected timeout of ${op} (${tookEffect ? 'after' : 'before'} it took effect)`);
  }
}

/** Runs `effect` as one request: after the scheduler's go, failing before or after it as the fate says. */
export const perform = async <T>(io: Interleaver, op: string, effect: () => T): Promise<T> => {
  const fate = await io.point(op);
  if (fate === 'fail-before') throw new InjectedTimeoutError(op, false);
  const out = effect();
  if (fate === 'fail-after') throw new InjectedTimeoutError(op, true);
  return out;
};

/**
 * A deep copy, as a store keeps what it was given and hands out what it keeps. Plain objects,
 * arrays and maps are copied here, a few times faster than structuredClone (the simulator
 * copies on every read and write); anything else (bytes, dates, class instances) goes to it.
 */
export const copy = <T>(value: T): T => {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(copy) as T;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) out[key] = copy((value as Record<string, unknown>)[key]);
    return out as T;
  }
  if (value instanceof Map) return new Map([...(value as Map<unknown, unknown>)].map(([k, v]) => [copy(k), copy(v)])) as T;
  return structuredClone(value);
};
