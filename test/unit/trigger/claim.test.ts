/**
 * npm start's claim (local/trigger/status.ts `claimRunner`), made by processes started in the
 * same instant: exactly one goes on, the others get the one-line refusal naming it; also when
 * the claim left by an npm start that died is there, which each of them tries to take over.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { claimRunner, TriggersRunningError } from '../../../local/trigger/status.ts';
import { runToEnd } from '../../support/process.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const status = fileURLToPath(new URL('../../../local/trigger/status.ts', import.meta.url));

/** A start that claims once `go` exists, holds its claim a moment, and says whether it went on. */
const claimer = `
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { claimRunner } from ${JSON.stringify(status)};
const [file, go] = process.argv.slice(2);
while (!existsSync(go)) await sleep(5);
try {
  claimRunner(file);
  console.log('went on');
  await sleep(1_500);
} catch (error) {
  console.log(error.message);
}
`;

/** Starts `n` claimers of `file`, lets them all claim at once, and returns what each printed. */
const raceOf = async (dir: string, n: number): Promise<string[]> => {
  const script = join(dir, 'claimer.mts');
  writeFileSync(script, claimer);
  const go = join(dir, 'go');
  const runs = Array.from({ length: n }, () =>
    runToEnd(join(root, 'node_modules', '.bin', 'tsx'), [script, join(dir, 'status.json'), go], { cwd: root, timeout: 60_000 }),
  );
  // Each polls for the file from the moment it has loaded: give all of them time to load, then go.
  await new Promise((resolve) => setTimeout(resolve, 4_000));
  writeFileSync(go, '');
  return (await Promise.all(runs)).map((r) => (r.stdout + r.stderr).trim());
};

const refusal = /^npm start is already running here \(pid \d+, still starting\): a second one would share its consumer groups/;

describe("npm start's claim", () => {
  it('of three starts at once, exactly one goes on; the others are refused in one line', async () => {
    const outcomes = await raceOf(mkdtempSync(join(tmpdir(), 'claim-')), 3);
    expect(outcomes.filter((o) => o === 'went on')).toHaveLength(1);
    expect(outcomes.filter((o) => refusal.test(o))).toHaveLength(2);
  }, 60_000);

  it("of three starts at once beside a dead npm start's claim, exactly one takes it over", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'claim-stale-'));
    writeFileSync(join(dir, 'npm-start.lock'), String(2 ** 22 + 1));
    const outcomes = await raceOf(dir, 3);
    expect(outcomes.filter((o) => o === 'went on')).toHaveLength(1);
    expect(outcomes.filter((o) => refusal.test(o))).toHaveLength(2);
  }, 60_000);

  it('refuses while the claim is held, and lets it go', () => {
    const dir = mkdtempSync(join(tmpdir(), 'claim-own-'));
    const file = join(dir, 'status.json');
    const release = claimRunner(file);
    expect(() => claimRunner(file)).toThrow(TriggersRunningError);
    release();
    expect(existsSync(join(dir, 'npm-start.lock'))).toBe(false);
    claimRunner(file)();
  });
});
