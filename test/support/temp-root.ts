/**
 * Global setup of the unit project: every temporary directory its tests make (the CDK's
 * synthesized apps, bundles, stores) goes under one directory of this run, removed at the end,
 * so a passing `npm test` leaves nothing behind in the system's temporary directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const saved = process.env.TMPDIR;
  const root = mkdtempSync(join(tmpdir(), 'kafka-aggregates-test-'));
  // os.tmpdir() reads TMPDIR at each call; the test workers inherit it.
  process.env.TMPDIR = root;
  return () => {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
    rmSync(root, { recursive: true, force: true });
  };
}
