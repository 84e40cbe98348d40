/**
 * `npm run chaos`: the chaos run from the command line. Prints the seed and the command line
 * that replays it, then commands sent, accepted and rejected, faults by kind, violations,
 * events lost and duration. Exit 0 only when there is no violation and no event was lost.
 */
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import { configuredEndpoint } from '../../functions/config.ts';
import { runChaos, type ChaosReport, type TableLoss } from './chaos.ts';
import { FAULT_KINDS } from './faults.ts';
import { formatReport } from './report.ts';
import { startOwnEmulator, type OwnEmulator } from './restarts.ts';

process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const help = `Usage: npm run chaos -- [--commands 10000] [--accounts 300] [--seed n] [--rate 400]
                            [--no-broker-restart] [--no-table-loss] [--fault-rate 0.3] [--emulator-port 8011] [--keep]

Sends seeded random commands (deposits, withdrawals and closes racing on the same accounts,
re-sent commandIds, stale expectedVersions, invalid input) through the emulated MSK trigger
and the real command side on topics, tables and consumer groups of its own, injecting faults:
crash after the DynamoDB commit, crash mid-publish, crash before the offset commit, duplicate
delivery, two invocations racing on one partition, throttling, a broker restart (when this
project's local stack runs the broker) and an emulator restart (a moto server of the run's
own, on --emulator-port; with AWS_ENDPOINT_URL_DYNAMODB or AWS_ENDPOINT_URL set, the run's tables are deleted and
recreated instead). Then waits for quiescence and runs the invariant checker.
Exit codes: 0 no violation and no event lost, 1 otherwise, 2 error.`;

const { values } = parseArgs({
  options: {
    commands: { type: 'string', default: '10000' },
    accounts: { type: 'string', default: '300' },
    seed: { type: 'string' },
    rate: { type: 'string', default: '400' },
    'fault-rate': { type: 'string', default: '0.3' },
    'no-broker-restart': { type: 'boolean', default: false },
    'no-table-loss': { type: 'boolean', default: false },
    'emulator-port': { type: 'string', default: '8011' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h' },
  },
});

const n = (value: number): string => value.toLocaleString('en');

const print = (report: ChaosReport, replay: string): void => {
  const faults = FAULT_KINDS.filter((k) => report.faults[k] !== undefined).map((k) => `${k} ${n(report.faults[k] ?? 0)}`);
  const lines = [
    '',
    `chaos run ${report.runId}`,
    `seed        ${report.seed}   replay: ${replay}`,
    `commands    ${n(report.sent)} sent (${n(report.resent)} re-sent commandIds): ${n(report.accepted)} accepted, ${n(report.rejected)} rejected ` +
      `(${Object.entries(report.rejections).sort(([, a], [, b]) => b - a).map(([code, count]) => `${code} ${n(count)}`).join(', ')})`,
    `faults      ${faults.join(', ') || 'none'}`,
    ...report.skipped.map((s) => `skipped     ${s}`),
    `invocations ${n(report.invocations.ok)} ok; failed and retried: ${Object.entries(report.invocations.failed).map(([name, count]) => `${name} ${n(count)}`).join(', ') || 'none'}`,
    ...formatReport(report.check, 20),
    `outcomes    ${n(report.mismatches.length)} command(s) whose results differ from the in-order decision, ${n(report.missingResults)} without any result`,
    ...report.mismatches.slice(0, 10).map((m) => `  ${m.aggregateId} ${m.commandId}: expected ${JSON.stringify(m.expected)}, got ${JSON.stringify(m.actual)}`),
    `events lost ${n(report.eventsLost)}`,
    `quiescent   ${report.quiescent ? 'yes (every command has a result, consumer lag 0)' : 'NO: timed out waiting'}`,
    `duration    ${(report.durationMs / 1000).toFixed(1)} s`,
    report.names.kept ? `kept        topics ${report.names.topics.join(', ')}; tables ${report.names.tables.join(', ')}` : 'cleaned up  the run\'s topics and tables are deleted',
  ];
  for (const line of lines) console.log(line);
};

const main = async (): Promise<number> => {
  if (values.help === true) {
    console.log(help);
    return 0;
  }
  const seed = values.seed === undefined ? randomInt(1, 2 ** 31 - 1) : Number(values.seed);
  const commands = Number(values.commands);
  const accounts = Number(values.accounts);
  const rate = Number(values.rate);
  const faultRate = Number(values['fault-rate']);
  if (![seed, commands, accounts, rate].every((v) => Number.isSafeInteger(v) && v > 0) || !(faultRate >= 0 && faultRate <= 1)) {
    console.error(`chaos: --commands, --accounts, --rate and --seed must be positive whole numbers and --fault-rate in [0, 1]\n\n${help}`);
    return 2;
  }
  const replay = [
    'npm run chaos --',
    `--seed ${seed} --commands ${commands} --accounts ${accounts} --rate ${rate} --fault-rate ${faultRate}`,
    values['no-broker-restart'] ? '--no-broker-restart' : '',
    values['no-table-loss'] ? '--no-table-loss' : '',
  ].filter((s) => s !== '').join(' ');
  console.log(`chaos: seed ${seed}; replay with: ${replay}`);

  // The emulator restart loses every table of the emulator: the run brings its own, unless told to use an endpoint.
  let emulator: OwnEmulator | undefined;
  let tableLoss: TableLoss = values['no-table-loss'] ? 'none' : 'drop-tables';
  if (tableLoss !== 'none' && configuredEndpoint('DYNAMODB') === undefined) {
    emulator = await startOwnEmulator(Number(values['emulator-port']));
    process.env.AWS_ENDPOINT_URL_DYNAMODB = emulator.endpoint;
    tableLoss = 'restart-emulator';
    console.log(`chaos: DynamoDB is a moto server of the run's own at ${emulator.endpoint}, restarted mid-run`);
  } else if (tableLoss !== 'none') console.log(`chaos: DynamoDB is ${configuredEndpoint('DYNAMODB')}: the emulator is not ours to restart; the run deletes and recreates its tables instead`);
  try {
    const report = await runChaos({
      commands,
      accounts,
      seed,
      rate,
      brokerRestart: !values['no-broker-restart'],
      tableLoss,
      ...(emulator === undefined ? {} : { restartEmulator: () => emulator.restart() }),
      rates: { invocation: faultRate, throttle: 0.02, storm: 0.002 },
      keep: values.keep,
      log: (line) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`),
    });
    print(report, replay);
    return report.check.violations.length === 0 && report.eventsLost === 0 && report.mismatches.length === 0 && report.quiescent ? 0 : 1;
  } finally {
    await emulator?.stop();
  }
};

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
