/**
 * `npm run bench:bundles [-- --runs N]`: builds every function as the stack deploys it
 * (infra/bundling.ts) and prints each bundle's size, its largest packages, and its cold import
 * time: a fresh Node process per run that imports the bundle with `--enable-source-maps`, as
 * Lambda's NODE_OPTIONS has it, timed from inside the process (Node's own start-up excluded).
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildBundle, bytesByPackage, deployedEntries, PROJECT_ROOT } from '../infra/bundling.ts';
import { parseScript, scriptOptions, wholeNumber } from '../local/script-options.ts';

const USAGE = `Usage: npm run bench:bundles -- [--runs <n>]

Builds every function as the stack deploys it and prints each bundle's size, its largest
packages and its cold import time, the median of fresh Node processes (docs/BENCHMARKS.md).

Options:
  --runs <n>    fresh processes per function (default 10)
  -h, --help    this help`;

const kb = (bytes: number): string => `${(bytes / 1000).toFixed(1)} kB`;

/** Milliseconds a fresh Node process takes to import `file`. */
const coldImportMs = (file: string): number => {
  const script = `const t = performance.now(); await import(${JSON.stringify(pathToFileURL(file).href)}); console.log(performance.now() - t);`;
  const out = execFileSync(process.execPath, ['--enable-source-maps', '--input-type=module', '-e', script], {
    env: { ...process.env, AWS_REGION: 'us-east-1', POWERTOOLS_METRICS_DISABLED: 'true' },
    encoding: 'utf8',
  });
  return Number(out.trim().split('\n').at(-1));
};

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

const main = async (): Promise<void> => {
  const runs = scriptOptions({ command: 'npm run bench:bundles --', usage: USAGE }, (argv) => {
    const args = parseScript(argv, { runs: { type: 'string', default: '10' } });
    return args && wholeNumber('runs', args.runs, 1);
  });
  const outRoot = join(PROJECT_ROOT, '.cache', 'bundles');
  rmSync(outRoot, { recursive: true, force: true });
  console.log(`Node ${process.version}; cold import: ${runs} fresh processes per function, median (min–max)\n`);
  for (const [key, entry] of Object.entries(deployedEntries)) {
    const bundle = await buildBundle(entry, join(outRoot, key));
    coldImportMs(bundle.file); // once unmeasured, so every measured run finds the file in the page cache
    const times = Array.from({ length: runs }, () => coldImportMs(bundle.file));
    const top = bytesByPackage(bundle)
      .slice(0, 6)
      .map(([name, bytes]) => `${name} ${kb(bytes)}`);
    console.log(
      `${key.padEnd(16)} ${kb(bundle.bytes).padStart(9)}  import ${median(times).toFixed(0)} ms (${Math.min(...times).toFixed(0)}–${Math.max(...times).toFixed(0)})`,
    );
    console.log(`${''.padEnd(16)} ${top.join(', ')}`);
  }
};

await main();
