/**
 * A function's containers in the emulated trigger (local/trigger/containers.ts): one
 * invocation per container at a time, as on Lambda. The module is a real function module
 * (test/support/trigger-handler.ts), imported as the trigger imports it; each of its
 * instances has a handler of its own, which tells the instances apart.
 */
import { describe, expect, it, vi } from 'vitest';
import { Containers } from '../../../local/trigger/containers.ts';
import type { FunctionModule } from '../../../local/trigger/lambda.ts';
import { shutdowns } from '../../support/trigger-handler.ts';

const ENTRY = 'test/support/trigger-handler.ts';

/** A call that holds its container until `release` is called; `handler` tells which instance it ran in. */
const held = () => {
  let release = (): void => undefined;
  const until = new Promise<void>((resolve) => (release = resolve));
  let ran: FunctionModule['handler'] | undefined;
  const call = async (fn: FunctionModule) => {
    ran = fn.handler;
    await until;
    return fn.handler;
  };
  return { call, release: () => release(), started: () => ran !== undefined };
};

const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

describe('Containers', () => {
  it('gives calls that overlap a module instance each, and an idle one to the next call', async () => {
    const containers = new Containers(ENTRY);
    await containers.warm();
    const [one, two] = [held(), held()];
    const running = [containers.run(one.call), containers.run(two.call)];
    one.release();
    two.release();
    const [first, second] = await Promise.all(running);
    expect(first).not.toBe(second);
    expect(containers.count).toBe(2);
    const third = await containers.run((fn) => Promise.resolve(fn.handler));
    expect([first, second]).toContain(third);
    expect(containers.count).toBe(2);
  });

  it('keeps to the reserved concurrency: a call waits for a container to be free', async () => {
    const containers = new Containers(ENTRY, 1);
    const [one, two] = [held(), held()];
    const first = containers.run(one.call);
    const second = containers.run(two.call);
    // The first call starts once its module instance has loaded, which a loaded machine slows.
    await vi.waitFor(() => expect(one.started()).toBe(true), { timeout: 10_000 });
    await tick();
    expect(two.started()).toBe(false);
    one.release();
    await first;
    await vi.waitFor(() => expect(two.started()).toBe(true), { timeout: 10_000 });
    two.release();
    expect(await second).toBe(await first);
    expect(containers.count).toBe(1);
  });

  it('shuts every container down once', async () => {
    const before = shutdowns().length;
    const containers = new Containers(ENTRY);
    const [one, two] = [held(), held()];
    const running = [containers.run(one.call), containers.run(two.call)];
    one.release();
    two.release();
    await Promise.all(running);
    await containers.shutdown();
    expect(shutdowns().length - before).toBe(2);
  });

  it('counts no container whose module failed to load, and says why', async () => {
    const containers = new Containers('test/support/no-such-function.ts');
    await expect(containers.run(() => Promise.resolve())).rejects.toMatchObject({ name: 'HandlerModuleError' });
    expect(containers.count).toBe(0);
  });
});
