/** What the demo's scenario (e) does over and over (local/demo/versions.ts): rounds of commands, and check-deploy runs. */
import { checkDeployCommand, type DeployCode } from '../cli/check-deploy.ts';
import { command, say, type Demo } from '../demo-scenarios.ts';

/** How long a round's results may take. */
const RESULTS_MS = 60_000;
/** Commands per produce request. */
const CHUNK = 500;

/**
 * Sends `rounds` rounds of one command per account from round `from` (round 0 opens the
 * accounts; then three deposits to a withdrawal), and waits for every result.
 */
export const sendRounds = async (
  demo: Demo,
  ids: readonly string[],
  from: number,
  rounds: number,
): Promise<{ sent: number; decided: number }> => {
  const commands = Array.from({ length: rounds }, (_, i) => from + i).flatMap((round) =>
    ids.map((id) =>
      round === 0
        ? command(id, 'OpenAccount', { owner: 'Lin' })
        : round % 4 === 3
          ? command(id, 'Withdraw', { amount: 30 })
          : command(id, 'Deposit', { amount: 25 }),
    ),
  );
  for (let i = 0; i < commands.length; i += CHUNK) await demo.client.sendMany(commands.slice(i, i + CHUNK));
  const results = await Promise.allSettled(commands.map((c) => demo.client.result(c.commandId, RESULTS_MS)));
  return { sent: commands.length, decided: results.filter((r) => r.status === 'fulfilled').length };
};

/** Runs check-deploy over `code` with `args` against the demo's topic and tables, printing its lines indented; its exit code and lines. */
export const checkDeployLines = async (code: DeployCode, args: readonly string[]): Promise<{ code: number; lines: string[] }> => {
  const lines: string[] = [];
  const print = console.log;
  console.log = (...parts: unknown[]) => lines.push(...parts.map(String).join(' ').split('\n'));
  let exit: number;
  try {
    exit = await checkDeployCommand(code).run([...args]);
  } finally {
    console.log = print;
  }
  for (const line of lines) say(`      ${line}`);
  say(`      (exit ${exit})`);
  return { code: exit, lines };
};
