/**
 * The deployment's aggregate types, indexed by name and checked once at start: names that
 * would break item keys or the derived ids' limits (core/limits.ts), a type defined twice, event schemas that validate asynchronously
 * (the log's readers validate synchronously) and upcaster chains with gaps are refused.
 */
import type { AnyAggregate } from './aggregate.ts';
import { idProblem, MAX_NAME_CHARS } from './limits.ts';
import { chainProblems } from './upcast.ts';
import { KafkaAggregatesError } from './errors.ts';

/** The aggregate definitions cannot run together. */
export class InvalidAggregateError extends KafkaAggregatesError {
  static override readonly disposition = 'retry-batch';
  override readonly name = 'InvalidAggregateError';
}

const AGGREGATE_TYPE_NAME = /^[A-Za-z][A-Za-z0-9_.-]*$/;

/**
 * True when a schema answers a probe asynchronously. A schema that goes asynchronous only for
 * some values (zod with an async refinement) passes; its first such event is then refused
 * when it is decided (DecideFailed), so it never reaches the log.
 */
const answersAsync = (schema: { readonly '~standard': { validate(value: unknown): unknown } }): boolean => {
  const answer = schema['~standard'].validate(undefined);
  if (answer instanceof Promise) {
    answer.catch(() => undefined);
    return true;
  }
  return false;
};

/** Indexes aggregate definitions by type, refusing what would break the framework's guarantees. */
export const registry = (aggregates: readonly AnyAggregate[]): ReadonlyMap<string, AnyAggregate> => {
  const map = new Map<string, AnyAggregate>();
  for (const aggregate of aggregates) {
    if (!AGGREGATE_TYPE_NAME.test(aggregate.type))
      throw new InvalidAggregateError(`aggregate type ${JSON.stringify(aggregate.type)} must match ${String(AGGREGATE_TYPE_NAME)}`);
    // Type names are parts of keys and ids (core/limits.ts); command and event types travel in them too.
    const names = [aggregate.type, ...Object.keys(aggregate.commands), ...Object.keys(aggregate.events)];
    const tooLong = names.filter((name) => idProblem(name, MAX_NAME_CHARS) !== undefined);
    if (tooLong.length > 0)
      throw new InvalidAggregateError(
        `${aggregate.type}: names must be well-formed and at most ${MAX_NAME_CHARS} characters: ${tooLong.join(', ')}`,
      );
    if (map.has(aggregate.type)) throw new InvalidAggregateError(`aggregate type ${aggregate.type} is defined twice`);
    const schemas = aggregate.events as Readonly<Record<string, (typeof aggregate.events)[string]>>;
    const asynchronous = Object.entries(schemas)
      .filter(([, schema]) => answersAsync(schema))
      .map(([type]) => type);
    if (asynchronous.length > 0)
      throw new InvalidAggregateError(
        `${aggregate.type}: the schemas of ${asynchronous.join(', ')} validate asynchronously; event schemas must validate synchronously, ` +
          'since the rebuild and the event side read the log with them',
      );
    const problems = chainProblems(aggregate);
    if (problems.length > 0) throw new InvalidAggregateError(`${aggregate.type}: upcasters: ${problems.join('; ')}`);
    map.set(aggregate.type, aggregate);
  }
  return map;
};
