/**
 * The local DynamoDB emulator: moto server from PyPI in a project-local venv
 * (`.cache/venv`), on 127.0.0.1:8000, started through moto-serial.py so that it handles one
 * request at a time (moto alone lets two racing conditional writes both win). It holds
 * everything in memory.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DeleteTableCommand, paginateListTables } from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../functions/compose/operator.ts';
import { dynamoEndpoint, LOCAL_DYNAMODB_ENDPOINT } from '../../functions/config.ts';
import type { Component } from './component.ts';
import { MissingToolError, StackError, StartTimeoutError } from './errors.ts';
import { cacheDir, logFile, projectRoot } from './paths.ts';
import { capture, isOurs, logTail, readPidFile, run, startDetached, stopRecorded, waitUntil, type Detached } from './processes.ts';

const requirements = join(projectRoot, 'local', 'requirements.txt');
/** The venv of the project's Python tools (moto, cfn-lint). */
export const venvDir = join(cacheDir, 'venv');
/** Path of a program installed in the venv. */
export const venvBin = (program: string): string => join(venvDir, 'bin', program);
/** Written after a successful install, holding the hash of requirements.txt: a change installs again. */
const installedMarker = join(venvDir, 'requirements.sha256');
const motoServer = venvBin('moto_server');
/** moto_server behind one lock: each request, conditional writes included, atomic as in DynamoDB. */
const serialLauncher = join(projectRoot, 'local', 'stack', 'moto-serial.py');
/** Program and arguments that start the emulator on `host:port`; its command line contains `motoMarker`. */
export const motoCommand = (host: string, port: number | string): [string, string[]] => [
  venvBin('python'),
  [serialLauncher, '-H', host, '-p', String(port)],
];
/** Part of the emulator's command line, by which a recorded pid is recognised as ours. */
export const motoMarker = 'moto-serial.py';
const endpoint = new URL(LOCAL_DYNAMODB_ENDPOINT);
const log = logFile('moto');
/** What `python3 -m venv` and pip print: shown only when the install fails. */
const installLog = logFile('moto-install');
const markers = [motoMarker, venvDir];
const hint =
  'Or point AWS_ENDPOINT_URL_DYNAMODB (or AWS_ENDPOINT_URL, for every AWS client) at LocalStack or another DynamoDB endpoint (e.g. AWS_ENDPOINT_URL=http://localhost:4566); the stack then starts no emulator.';

const requirementsHash = (): string => createHash('sha256').update(readFileSync(requirements)).digest('hex');
const installed = (): boolean =>
  existsSync(motoServer) && existsSync(installedMarker) && readFileSync(installedMarker, 'utf8').trim() === requirementsHash();

const checkPython = async (): Promise<void> => {
  if (installed()) return;
  const out = await capture('python3', ['--version']);
  if (out?.code !== 0)
    throw new MissingToolError(
      'python3',
      `The local DynamoDB emulator (moto) is installed from PyPI with Python 3, and \`python3\` was not found. Install Python 3.9+ with venv and pip. ${hint}`,
    );
};

/** Creates `.cache/venv` and installs local/requirements.txt into it, when it changed. */
const install = async (): Promise<void> => {
  if (installed()) return;
  rmSync(installLog, { force: true });
  console.log(`[moto] Installing local/requirements.txt into ${venvDir} (first run, or requirements changed; log: ${installLog})`);
  if (!existsSync(venvBin('python'))) {
    try {
      await run('python3', ['-m', 'venv', venvDir], installLog);
    } catch (error) {
      rmSync(venvDir, { recursive: true, force: true });
      throw new MissingToolError('python3', `\`python3 -m venv\` failed; on Debian or Ubuntu install python3-venv. ${hint}`, {
        cause: error,
      });
    }
  }
  await run(venvBin('pip'), ['install', '--disable-pip-version-check', '--progress-bar', 'off', '-r', requirements], installLog);
  writeFileSync(installedMarker, requirementsHash() + '\n');
};

/** Something answers HTTP at the endpoint (moto, or another emulator someone runs there). */
const answers = async (url: string = LOCAL_DYNAMODB_ENDPOINT): Promise<boolean> => {
  try {
    await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return true;
  } catch {
    return false;
  }
};

const running = async (): Promise<boolean> => {
  const record = readPidFile('moto');
  return record !== undefined && (await isOurs(record.pid, markers));
};

const waitReady = async (): Promise<void> => {
  if (await waitUntil(() => answers(), 60_000, running)) return;
  const why = (await running()) ? 'did not answer within 60 s' : 'exited while starting';
  throw new StartTimeoutError('moto', log, `The local DynamoDB emulator ${why}. Its log is ${log}; last lines:\n${logTail(log)}`);
};

const launch = async (): Promise<Detached> => {
  const started = startDetached('moto', ...motoCommand(endpoint.hostname, endpoint.port), projectRoot);
  await waitReady();
  return started;
};

/** Clears all state: moto's reset API, or deleting every table when another emulator answers here. */
const reset = async (): Promise<void> => {
  const response = await fetch(new URL('/moto-api/reset', LOCAL_DYNAMODB_ENDPOINT), { method: 'POST' });
  if (response.ok) return;
  const client = createDynamoClient();
  try {
    for await (const page of paginateListTables({ client }, {}))
      for (const table of page.TableNames ?? []) await client.send(new DeleteTableCommand({ TableName: table }));
  } catch (error) {
    throw new StackError(`Could not reset the DynamoDB endpoint ${LOCAL_DYNAMODB_ENDPOINT}`, { cause: error });
  } finally {
    client.destroy();
  }
};

/** The local DynamoDB emulator as a stack component. */
export const dynamodb: Component = {
  name: 'moto',
  title: 'DynamoDB emulator (moto)',
  endpoint: LOCAL_DYNAMODB_ENDPOINT,
  external: () => dynamoEndpoint() !== LOCAL_DYNAMODB_ENDPOINT,
  answers: () => answers(),
  checkTools: checkPython,
  install,
  launch,
  running,
  waitReady,
  stop: () => stopRecorded('moto', markers, 10_000),
  reset,
};
