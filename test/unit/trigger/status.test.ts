/**
 * The triggers' status file (local/trigger/status.ts) as `npm start` reads it before starting:
 * a live process that lists running triggers refuses a second runner; one that has stopped
 * them, or has ended, does not.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { refuseSecondRunner, TriggersRunningError, type TriggerStatus } from '../../../local/trigger/status.ts';

const file = join(mkdtempSync(join(tmpdir(), 'status-')), 'status.json');

const written = (status: Partial<TriggerStatus>): string => {
  // The parent (vitest's main process) is alive and is not this process: another npm start, as far as the file says.
  writeFileSync(file, JSON.stringify({ pid: process.ppid, updatedAt: new Date().toISOString(), blocked: [], ...status }));
  return file;
};

const running = [{ functionName: 'commandHandler', topic: 'commands', paused: false }];

describe('refusing a second npm start', () => {
  it('refuses beside a live process that runs triggers, naming it and its triggers', () => {
    expect(() => refuseSecondRunner(written({ triggers: running }))).toThrow(TriggersRunningError);
    expect(() => refuseSecondRunner(written({ triggers: running }))).toThrow(
      `npm start is already running here (pid ${process.ppid}, triggers commandHandler <- commands)`,
    );
  });

  it('goes ahead when the process has stopped its triggers, has ended, or is this one, or without a file', () => {
    expect(() => refuseSecondRunner(written({ triggers: [] }))).not.toThrow();
    expect(() => refuseSecondRunner(written({ triggers: running, pid: 2 ** 22 + 1 }))).not.toThrow();
    expect(() => refuseSecondRunner(written({ triggers: running, pid: process.pid }))).not.toThrow();
    expect(() => refuseSecondRunner(join(tmpdir(), 'no-such-status.json'))).not.toThrow();
  });
});
