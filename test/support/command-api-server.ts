/**
 * The command API on the local server of `npm start` (local/http/server.ts), with the real
 * command handler on the emulated trigger, on a test file's own topics, tables and consumer
 * groups: started before the file's tests, stopped after.
 */
import { afterAll, beforeAll, vi } from 'vitest';
import { provision } from '../../local/provision.ts';
import { runEnvironment } from '../../local/scratch.ts';
import { serveHttpFunction, type HttpFunctionServer } from '../../local/http/server.ts';
import { mappingsFromTopology } from '../../local/trigger/mappings.ts';
import { startTriggers, type Triggers } from '../../local/trigger/trigger.ts';
import { unique } from './kafka.ts';

/** Registers the hooks that start the server and the command trigger named after `prefix`; `env` is set for the file too. */
export const commandApiServer = (prefix: string, env: Record<string, string> = {}) => {
  const run = unique(prefix);
  let triggers: Triggers | undefined;
  let server: HttpFunctionServer | undefined;

  beforeAll(async () => {
    for (const [name, value] of Object.entries({ ...runEnvironment(run, ['aggregates', 'readModels']), ...env })) vi.stubEnv(name, value);
    await provision();
    triggers = await startTriggers({
      mappings: mappingsFromTopology({ only: ['commandHandler'], groupIdPrefix: `${run}-` }),
      log: () => undefined,
    });
    server = await serveHttpFunction({ port: 0 });
  });

  afterAll(async () => {
    await server?.stop();
    await triggers?.stop();
    vi.unstubAllEnvs();
  });

  return { run, server: () => server as HttpFunctionServer, triggers: () => triggers as Triggers };
};
