/**
 * What the wire carries: JSON. Commands arrive as JSON text and events and rows are stored as
 * JSON, so a value the test kit is given or gets back must be JSON already: a `Date`, `NaN`,
 * `Infinity`, `undefined` in an array, a `Map`, a class instance, a `bigint` or a function
 * would pass in memory and come out of `JSON.stringify` as something else, or not at all.
 * A property whose value is `undefined` is left out, as `JSON.stringify` leaves it out.
 */

/** Where `value` is not JSON: the path and what is there; undefined when it is JSON. */
export const jsonProblem = (value: unknown, path = 'data'): string | undefined => {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `${path} is ${value}, which JSON cannot hold`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      if (!(i in value) || value[i] === undefined) return `${path}[${i}] is undefined (JSON would make it null)`;
      const problem = jsonProblem(value[i], `${path}[${i}]`);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  if (typeof value === 'object') {
    const prototype: unknown = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null)
      return `${path} is a ${(value as { constructor?: { name?: string } }).constructor?.name ?? 'class instance'}, not a plain object`;
    for (const [key, field] of Object.entries(value)) {
      if (field === undefined) continue;
      const problem = jsonProblem(field, `${path}.${key}`);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  return `${path} is ${value === undefined ? 'undefined' : `a ${typeof value}`}, which JSON cannot hold`;
};

/** Throws unless `value` is JSON; `what` says whose value it is (`given(): MoneyDeposited`). */
export const assertJson = (value: unknown, what: string): void => {
  const problem = jsonProblem(value);
  if (problem !== undefined) throw new TypeError(`${what}: not JSON: ${problem}`);
};

/** `value` as the wire gives it back (undefined properties left out). */
export const asStored = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
