/**
 * An OpenAPI-driven fuzz run: schemathesis (installed into .cache/venv with moto, from
 * local/requirements.txt) reads docs/openapi.local.json and sends what it generates from it,
 * valid and invalid, to the local server of `npm start` on the real broker and emulator, with
 * the real command handler deciding. Every check must pass: no 5xx, every status, header and
 * body as the document declares, invalid input refused, valid input accepted. A bounded
 * number of examples and a time budget keep it under a minute; its output shows only on failure
 * (or with SCHEMATHESIS_OUTPUT set). The edge limits ids in characters (code points), as the
 * document's `maxLength` counts them, so what it generates at and past a limit is exact.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { venvBin } from '../../local/stack/dynamodb.ts';
import { commandApiServer } from '../support/command-api-server.ts';

/** Examples per operation and phase, and the run's time budget (seconds). */
const MAX_EXAMPLES = 30;
const MAX_SECONDS = 45;

// Outcomes come in well under a second here; a shorter wait keeps a stray slow case inside the budget.
const api = commandApiServer('fuzz-http', { COMMAND_API_WAIT_MS: '3000' });

/** Runs schemathesis; its exit code and everything it printed. */
const schemathesis = (args: readonly string[]): Promise<{ code: number | null; output: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(venvBin('st'), args, { env: { ...process.env, NO_COLOR: '1', SCHEMATHESIS_TELEMETRY: 'false' } });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });

describe('schemathesis against the local command API', () => {
  it('finds no failure in a bounded run of every check', { timeout: 90_000 }, async () => {
    const { code, output } = await schemathesis([
      'run',
      join('docs', 'openapi.local.json'),
      '--url',
      api.server().url,
      '--checks',
      'all',
      '--max-examples',
      String(MAX_EXAMPLES),
      '--max-time',
      String(MAX_SECONDS),
      '--seed',
      '1',
      // Not the stateful phase: its sequences follow the server's answers (offsets, partitions,
      // what earlier tests left in the tables), so one seed does not replay one run.
      '--phases',
      'examples,coverage,fuzzing',
      '--request-timeout',
      '10',
    ]);
    expect(code, output).toBe(0);
    expect(output, output).toMatch(/(\d+) generated, \1 passed/);
    if (process.env.SCHEMATHESIS_OUTPUT !== undefined) console.log(output);
  });
});
