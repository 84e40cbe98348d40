/**
 * The chaos run's handle on its runtime process, killed while the run's other parts still talk
 * to it (the sender's burst pauses, the operator's `blocked`): what they ask beside a SIGKILL
 * is answered with nothing, and no EPIPE of the dead IPC channel brings the run down.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { RuntimeProcess } from '../../../chaos/runtime-process.ts';
import type { RuntimeConfig } from '../../../chaos/runtime-protocol.ts';

const dir = mkdtempSync(join(tmpdir(), 'runtime-process-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const start = () =>
  RuntimeProcess.start({
    config: {} as RuntimeConfig,
    env: process.env,
    logFile: join(dir, 'runtime.log'),
    onReport: () => undefined,
    onCount: () => undefined,
    module: fileURLToPath(new URL('../../fixtures/chaos-runtime-stub.ts', import.meta.url)),
  });

describe('RuntimeProcess', () => {
  it('answers calls made beside a hard kill with nothing, and survives the dead channel', async () => {
    const runtime = await start();
    await runtime.pause('commandHandler');
    expect(await runtime.blocked()).toEqual([]);
    const killed = runtime.kill();
    // Asked while it dies, as the operator polls `blocked` and the sender pauses: the channel
    // still says connected for a moment after the SIGKILL, and a write then meets EPIPE.
    const answers: Promise<unknown>[] = [runtime.resume('commandHandler'), runtime.pause('eventHandler'), runtime.calm()];
    while (!runtime.gone) {
      answers.push(runtime.blocked());
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await killed;
    const [resumed, paused, calmed, ...blocked] = await Promise.all(answers);
    expect([resumed, paused, calmed]).toEqual([undefined, undefined, undefined]);
    expect(blocked.every((b) => Array.isArray(b) && b.length === 0)).toBe(true);
    expect(runtime.gone).toBe(true);
    // Nothing left that waits on it.
    await runtime.stop(1_000);
  }, 30_000);
});
