/**
 * `npm run bench`: the interleaved load through npm start's startup (bench/interleaved.ts),
 * then the command side's grouped shapes against the naive baseline (bench/commands.ts), each
 * in a process of its own, on one local stack: started here when it is not running (and
 * stopped at the end if it was), so that the first benchmark does not stop it under the
 * second. `npm run bench -- interleaved|grouped [options]` runs one, with its options (it
 * starts the stack itself, once its options are read); `npm run bench:rebuild` is the rebuild's.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startStack } from '../local/stack/stack.ts';

const benches = { interleaved: './interleaved.ts', grouped: './commands.ts' } as const;

const USAGE = `Usage: npm run bench                              both benchmarks, with their defaults
       npm run bench -- interleaved [options]     interleaved load through npm start's system
       npm run bench -- grouped [options]         the command side's shapes against the naive baseline

\`npm run bench -- <benchmark> --help\` lists a benchmark's options. The others: npm run
bench:rebuild, bench:latency, bench:http, bench:cost, bench:bundles (docs/BENCHMARKS.md).`;

const [first, ...rest] = process.argv.slice(2);
if (first === '--help' || first === '-h') {
  console.log(USAGE);
  process.exit(0);
}
if (first !== undefined && !(first in benches)) {
  const what = first.startsWith('-') ? `options go after a benchmark's name, not ${first}` : `unknown benchmark ${JSON.stringify(first)}`;
  process.stderr.write(`${what}: use one of ${Object.keys(benches).join(', ')}, or none for all\nSee \`npm run bench -- --help\`.\n`);
  process.exit(2);
}

const stack = first === undefined ? await startStack({ log: (line) => console.log(`[stack] ${line}`) }) : undefined;
let status: number | null = 0;
for (const name of first === undefined ? Object.keys(benches) : [first]) {
  const file = fileURLToPath(new URL(benches[name as keyof typeof benches], import.meta.url));
  ({ status } = spawnSync(process.execPath, ['--import', 'tsx', file, ...rest], { stdio: 'inherit' }));
  if (status !== 0) break;
}
await stack?.stop();
process.exit(status ?? 1);
