#!/usr/bin/env node
// The `kafka-aggregates` command: registers tsx so that Node loads the TypeScript sources as they are.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { fileURLToPath } from 'node:url';

// The project's Node.js 22 (npm ci installs it; npm scripts and npx find it first on PATH).
const projectNode = fileURLToPath(new URL('../node_modules/.bin/node', import.meta.url));

if (Number(process.versions.node.split('.')[0]) < 22 && existsSync(projectNode)) {
  // Started by an older system Node (`node bin/kafka-aggregates.js`): run on the project's Node
  // instead, so the CLI behaves as everywhere else. The child answers signals and this one waits:
  // Ctrl-C reaches both from the terminal; a signal sent to this pid alone (kill, timeout, a
  // supervisor) is passed on, or the child would never hear it.
  const child = spawn(projectNode, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../local/cli.ts');
}
