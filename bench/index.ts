/**
 * `npm run bench`: the interleaved load through npm start's startup (bench/interleaved.ts),
 * then the command side's grouped shapes against the naive baseline (bench/commands.ts), each
 * in a process of its own, on one local stack: started here when it is not running (and
 * stopped at the end if it was), so that the first benchmark does not stop it under the
 * second. `npm run bench -- interleaved|grouped [options]` runs one, with its options;
 * `npm run bench:rebuild` is the rebuild's.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startStack } from '../local/stack/stack.ts';

const benches = { interleaved: './interleaved.ts', grouped: './commands.ts' } as const;
const [first, ...rest] = process.argv.slice(2);
const chosen = first === undefined ? Object.keys(benches) : [first];
const unknown = chosen.find((name) => !(name in benches));
if (unknown !== undefined) {
  process.stderr.write(`unknown benchmark ${JSON.stringify(unknown)}: use one of ${Object.keys(benches).join(', ')}, or none for all\n`);
  process.exit(2);
}

const stack = await startStack({ log: (line) => console.log(`[stack] ${line}`) });
let status: number | null = 0;
for (const name of chosen) {
  const file = fileURLToPath(new URL(benches[name as keyof typeof benches], import.meta.url));
  ({ status } = spawnSync(process.execPath, ['--import', 'tsx', file, ...(first === undefined ? [] : rest)], { stdio: 'inherit' }));
  if (status !== 0) break;
}
await stack.stop();
process.exit(status ?? 1);
