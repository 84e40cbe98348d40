/** The commands of `kafka-aggregates` (local/cli.ts dispatches to them), one file each. */
import type { CliCommand } from './common.ts';
import { carryParks } from './carry-parks.ts';
import { census } from './census.ts';
import { checkDeployCli } from './check-deploy.ts';
import { grow } from './grow.ts';
import { discard, release } from './park.ts';
import { rebuild } from './rebuild.ts';
import { send } from './send.ts';
import { skip } from './skip.ts';
import { stack } from './stack.ts';
import { state } from './state.ts';
import { status } from './status.ts';
import { tail } from './tail.ts';
import { trace } from './trace.ts';
import { verify } from './verify.ts';

/** Every command, in the order of the help. */
export const commands: readonly CliCommand[] = [
  send,
  state,
  tail,
  trace,
  status,
  skip,
  release,
  discard,
  carryParks,
  rebuild,
  verify,
  census,
  checkDeployCli,
  grow,
  stack,
];
