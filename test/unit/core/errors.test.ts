/**
 * The error taxonomy (functions/core/errors.ts) holds for every error class of functions/ and local/:
 * each is found in the sources, extends the one base, names itself and states its own
 * disposition. A new error class that forgets either fails here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DISPOSITIONS, dispositionOf, KafkaAggregatesError } from '../../../functions/core/errors.ts';
import { EventChainError } from '../../../functions/core/event-reader.ts';
import { TableBehindLogError } from '../../../functions/control/control.ts';
import { EventGapError } from '../../../functions/event/errors.ts';
import { UnknownProjectionError } from '../../../functions/rebuild/rebuild-projection.ts';

const root = join(import.meta.dirname, '../../..');
// The functions and the local runtime and tools; chaos/, bench/ and infra/ (synth-time) throw outside any batch.
const FOLDERS = ['functions', 'local'];

const sources = (dir: string): string[] =>
  readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
  );

interface Found {
  readonly file: string;
  readonly name: string;
  readonly base: string;
  readonly exported: boolean;
  /** The class's text, from its declaration to its closing brace. */
  readonly body: string;
}

/** Every class of the project that extends an error class (by the `…Error` naming every one of them follows). */
const errorClasses: Found[] = FOLDERS.flatMap(sources).flatMap((file) => {
  const text = readFileSync(join(root, file), 'utf8');
  return [...text.matchAll(/^(export )?(?:abstract )?class (\w+) extends (\w*Error)\b[^{]*\{/gm)].map((m) => ({
    file,
    name: m[2] as string,
    base: m[3] as string,
    exported: m[1] !== undefined,
    body: text.slice(m.index, text.indexOf('\n}', m.index) + 2),
  }));
});

describe('the error taxonomy', () => {
  it('finds the error classes it checks (the scan itself works)', () => {
    expect(errorClasses.length).toBeGreaterThan(30);
    expect(errorClasses.map((c) => c.name)).toEqual(expect.arrayContaining(['EventGapError', 'TableBehindLogError', 'StackError']));
  });

  it('has one base: no error class but KafkaAggregatesError extends Error itself', () => {
    expect(errorClasses.filter((c) => c.base === 'Error').map((c) => `${c.file}: ${c.name}`)).toEqual([
      'functions/core/errors.ts: KafkaAggregatesError',
    ]);
  });

  it.each(errorClasses.filter((c) => c.name !== 'KafkaAggregatesError').map((c) => [`${c.file}: ${c.name}`, c] as const))(
    '%s names itself and states its own disposition',
    async (_, found) => {
      // A minified bundle loses class names: `name` must be written out.
      expect(found.body).toMatch(new RegExp(`readonly name(: string)? = '${found.name}'`));
      if (!found.exported) {
        expect(found.body).toMatch(/static override readonly disposition(: Disposition)? = '(retry-batch|halt-partition|reject-record)'/);
        return;
      }
      const module = (await import(join(root, found.file))) as Record<string, unknown>;
      const errorClass = module[found.name] as typeof KafkaAggregatesError;
      expect(errorClass.prototype).toBeInstanceOf(KafkaAggregatesError);
      expect(Object.hasOwn(errorClass, 'disposition'), 'the class states its own disposition, not its base’s').toBe(true);
      expect(DISPOSITIONS).toContain(errorClass.disposition);
    },
  );

  it('reads an error’s disposition from its class, and takes any other error for infrastructure', () => {
    const position = { topic: 'events', partition: 0, offset: 7 };
    const gap = new EventGapError({ kind: 'projection', name: 'p' }, 'row', 'account', 'a-1', 2, 4, position);
    expect(dispositionOf(gap)).toBe('halt-partition');
    expect(dispositionOf(new EventChainError({ code: 'UnknownEventType', message: 'm', position }))).toBe('halt-partition');
    expect(dispositionOf(new TableBehindLogError('aggregates'))).toBe('retry-batch');
    expect(dispositionOf(new UnknownProjectionError('nope', ['account-summary']))).toBe('reject-record');
    expect(dispositionOf(new TypeError('fetch failed'))).toBe('retry-batch');
    expect(dispositionOf('a string thrown')).toBe('retry-batch');
  });

  it('keeps names and messages as Error does', () => {
    const error = new TableBehindLogError('aggregates');
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('TableBehindLogError');
    expect(String(error)).toMatch(/^TableBehindLogError: /);
  });
});
