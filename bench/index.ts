/** `npm run bench`: the command-side benchmark against the naive baseline (bench/commands.ts); `npm run bench:rebuild` is the rebuild's. */
import './commands.ts';
