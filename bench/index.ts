/**
 * `npm run bench`: the interleaved load through npm start's startup (bench/interleaved.ts),
 * then the command side's grouped shapes against the naive baseline (bench/commands.ts), each
 * in a process of its own. `npm run bench -- interleaved|grouped [options]` runs one, with
 * its options; `npm run bench:rebuild` is the rebuild's.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const benches = { interleaved: './interleaved.ts', grouped: './commands.ts' } as const;
const [first, ...rest] = process.argv.slice(2);
const chosen = first === undefined ? Object.keys(benches) : [first];
for (const name of chosen) {
  if (!(name in benches)) {
    process.stderr.write(`unknown benchmark ${JSON.stringify(name)}: use one of ${Object.keys(benches).join(', ')}, or none for all\n`);
    process.exit(2);
  }
  const file = fileURLToPath(new URL(benches[name as keyof typeof benches], import.meta.url));
  const { status } = spawnSync(process.execPath, ['--import', 'tsx', file, ...(first === undefined ? [] : rest)], { stdio: 'inherit' });
  if (status !== 0) process.exit(status ?? 1);
}
