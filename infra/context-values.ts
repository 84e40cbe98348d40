/**
 * Readers of CDK context values for the stack's settings (settings.ts): each takes a key,
 * checks the value and says what is wrong with it (SettingsError) rather than deploying it.
 */
import type { Node } from 'constructs';

/** A context value that cannot be used. */
export class SettingsError extends Error {
  override readonly name = 'SettingsError';
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(`context ${key}: ${message}`);
  }
}

/** A string value, or undefined when unset or empty. */
export const text = (node: Node, key: string): string | undefined => {
  const value: unknown = node.tryGetContext(key);
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    throw new SettingsError(key, 'expected a string, number or boolean');
  }
  return String(value).trim();
};

/** One of `allowed`, or `fallback` when unset. */
export const oneOf = <T extends string>(node: Node, key: string, allowed: readonly T[], fallback: T): T => {
  const value = text(node, key);
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value)) throw new SettingsError(key, `expected one of ${allowed.join(', ')}, got ${value}`);
  return value as T;
};

/** A whole number, or `fallback` when unset. */
export const integer = (node: Node, key: string, fallback: number): number => {
  const value = text(node, key);
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n)) throw new SettingsError(key, `expected an integer, got ${value}`);
  return n;
};

/** `true` or `false`, or undefined when unset. */
export const flag = (node: Node, key: string): boolean | undefined => {
  const value = text(node, key);
  if (value === undefined) return undefined;
  if (value !== 'true' && value !== 'false') throw new SettingsError(key, `expected true or false, got ${value}`);
  return value === 'true';
};

/** Origins (`scheme://host[:port]`), comma separated; `*` is refused: name who may call. */
export const origins = (node: Node, key: string): string[] | undefined => {
  const value = text(node, key);
  if (value === undefined) return undefined;
  return value.split(',').map((origin) => {
    const trimmed = origin.trim();
    let parsed: URL | undefined;
    try {
      parsed = new URL(trimmed);
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined || parsed.origin !== trimmed)
      throw new SettingsError(
        key,
        `expected origins such as https://app.example.com, comma separated (no *, no path), got ${JSON.stringify(trimmed)}`,
      );
    return trimmed;
  });
};

/** `key:n,key:n`: a whole number of at least 1 per function key. */
export const concurrencies = (node: Node, key: string): Record<string, number> => {
  const value = text(node, key);
  if (value === undefined) return {};
  return Object.fromEntries(
    value.split(',').map((entry) => {
      const [name, count] = entry.split(':').map((part) => part.trim());
      const n = Number(count);
      if (name === undefined || name === '' || !Number.isSafeInteger(n) || n < 1)
        throw new SettingsError(key, `expected function:count pairs such as snapshotRebuild:1,commandApi:50, got ${JSON.stringify(entry)}`);
      return [name, n];
    }),
  );
};
