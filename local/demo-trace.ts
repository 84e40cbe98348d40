/**
 * The demo's scenario (d): one command traced end to end with `kafka-aggregates trace`, as an
 * operator would follow it: a withdrawal, its result and event, the read-model row and the
 * reaction checkpoint the event reached, the alert command the reaction caused, and that
 * command's own result and events.
 */
import { trace } from './cli/trace.ts';
import { check, command, say, sendAndWait, type Demo, type Verdict } from './demo-scenarios.ts';

/** How long the reaction's command may take to be decided and every item to apply the events. */
const SETTLE_MS = 30_000;

/** What `trace` prints for `commandId`, and its exit code. */
const traced = async (commandId: string): Promise<{ code: number; lines: string[] }> => {
  const lines: string[] = [];
  const print = console.log;
  console.log = (...args: unknown[]) => lines.push(...args.map(String).join(' ').split('\n'));
  try {
    return { code: await trace.run([commandId]), lines };
  } finally {
    console.log = print;
  }
};

/** The chain is whole: the reaction's command decided, and every row and checkpoint applied. */
const whole = (lines: readonly string[]): boolean =>
  lines.some((l) => l.includes('RaiseLowBalanceAlert')) &&
  lines.filter((l) => /^\s*result\s+accepted/.test(l)).length >= 2 &&
  !lines.some((l) => l.includes('not applied yet'));

/** (d) One command followed end to end: command, result, events, rows, and the command it caused. */
export const traceOne = async (demo: Demo): Promise<Verdict> => {
  const id = demo.id('d');
  say(`(d) Trace: a withdrawal that leaves ${id} below the low-balance threshold, followed end to end`);
  await sendAndWait(demo, command(id, 'OpenAccount', { owner: 'Grace' }));
  await sendAndWait(demo, command(id, 'Deposit', { amount: 1500 }));
  const withdraw = command(id, 'Withdraw', { amount: 1000 });
  await sendAndWait(demo, withdraw);
  say(`    $ npx kafka-aggregates trace ${withdraw.commandId}`);
  const deadline = Date.now() + SETTLE_MS;
  let last = await traced(withdraw.commandId);
  while (!whole(last.lines) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    last = await traced(withdraw.commandId);
  }
  for (const line of last.lines) say(`    ${line}`);
  return [
    check(last.code === 0, 'trace found the command and its result'),
    check(
      last.lines.some((l) => l.includes('MoneyWithdrawn')),
      'its event is in the chain, with its partition and offset',
    ),
    check(whole(last.lines), 'the alert command the reaction caused is in the chain, decided, and every row applied'),
  ].every(Boolean)
    ? 'passed'
    : 'failed';
};
