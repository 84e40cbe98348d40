/**
 * `npm run chaos`: the chaos run from the command line. Prints the seed and the command line
 * that replays it, then commands sent, accepted and rejected, every fault kind with its
 * count and what each infrastructure fault did, violations, events lost and duration. Exit 0
 * only when there is no violation and no event was lost.
 */
import { randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createKafka } from '../functions/compose/operator.ts';
import type { PartialResponseReading } from '../local/trigger/outcome.ts';
import { configuredEndpoint } from '../functions/config.ts';
import { mappingsFromTopology } from '../local/trigger/mappings.ts';
import { INFRASTRUCTURE_FAULTS, runChaos, type ChaosReport, type InfrastructureFault, type TableLoss } from './chaos.ts';
import { FAULT_KINDS } from './faults.ts';
import { formatReport } from '../local/verify/report.ts';
import { startOwnEmulator, type OwnEmulator } from './restarts.ts';
import { startStack } from '../local/stack/stack.ts';
import { parseArgsMessage } from '../local/script-options.ts';

process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

const help = `Usage: npm run chaos -- [--commands 1000] [--accounts 100] [--seed n] [--rate 400] [--fault-rate 0.3]
                            [--outage 5] [--large-every 250] [--skip fault,...] [--restart-broker]
                            [--no-table-loss] [--emulator-port 8011] [--partial-response checkpoint] [--park] [--keep]

With the defaults a run takes about two minutes (--commands 300: 80-120 s on a loaded machine),
restarts nothing that npm start uses and prints its duration at the end.

Sends seeded random commands (deposits, withdrawals and closes racing on the same accounts,
re-sent commandIds, stale expectedVersions, invalid input, bursts of commands with 215-235 KB
of metadata) through the emulated MSK trigger and the real command and event sides (projections
and the low-balance-alert reaction, whose commands join the run's), in a runtime process of its
own, on topics, tables and consumer groups of its own, with a DynamoDB emulator of its own.
Inside the command handler it injects crashes after the DynamoDB commit, mid-publish and before
the offset commit, duplicate deliveries, two invocations racing on one partition and
throttling; inside the event handler, crashes after the reactions' commands went out and after
the checkpoints, duplicate deliveries and racing invocations. On the infrastructure, one after
another while commands keep coming:
  topic-recreated   the run's commands topic drained, deleted and created again
  dynamodb-outage   the runtime's connections to DynamoDB cut (a proxy of the run's own), --outage seconds and on
                    until a batch has failed more than the old budget of ten retries
  cli-rebuild       kafka-aggregates rebuild run as a child process during load
  table-restored    the aggregates table replaced by an older copy of itself; the run rebuilds once commands are refused
  table-loss        the run's emulator restarted (every table lost), or with an endpoint of someone else's its tables deleted
  hard-kill         the runtime and the emulator killed with SIGKILL (the broker too with --restart-broker), then npm start's startup path
  projection-version account-summary version 2 deployed beside version 1 to the event handler, caught up, switched to and
                    version 1 dropped while commands keep coming; prints the longest live event-side pause meanwhile
  broker-restart    only with --restart-broker: the local broker stopped and started
  kafka-outage      only with --restart-broker: the local broker stopped as long as --outage, and on until a batch has
                    failed more than ten times (an attempt lasts about 25 s here: about 5 minutes), then started with its data
DynamoDB is a moto server of the run's own on --emulator-port, unless AWS_ENDPOINT_URL_DYNAMODB
or AWS_ENDPOINT_URL is set. Then waits for quiescence, runs the invariant checker (the reactions' commands
derived again from the events included) and compares every result with the outcome decided in order.

Options, and what they cost:
  --commands <n>        commands to send (default 1000); the faults, not the commands, take most of a default run
  --accounts <n>        accounts they race on (default 100); fewer: more races on each, not a longer run
  --rate <n>            commands per second between faults (default 400); sending takes commands/rate
                        seconds, and a rate above what the handlers keep up with only adds lag to drain
  --fault-rate <p>      share of each handler's invocations that meet a fault, 0 to 1 (default 0.3); each fault
                        is a retried batch, so a higher share drains more slowly
  --seed <n>            the seed to replay (a run prints its own); costs nothing
  --outage <s>          least length of the DynamoDB outage, in seconds (default 5); the run lasts as much longer
  --large-every <n>     a burst of ten large commands every n commands (0: none; default 250)
  --skip <faults>       infrastructure faults to leave out, comma separated (names above); each one
                        left out shortens the run by that fault and the drain after it
  --restart-broker      also stop the local broker (broker-restart, kafka-outage, and in the hard kill): about
                        6 minutes more, and everything else on that broker loses it meanwhile. Refused while
                        npm start's triggers are connected to it; only a broker this project's stack started is stopped
  --no-table-loss       no table-loss: saves the emulator restart and the rebuild of every table after it
  --emulator-port <n>   port of the run's own DynamoDB emulator (default 8011); costs nothing
  --partial-response <r> how the emulated trigger reads a partial batch response: checkpoint (the
                        lowest failed record and all after it retried; default) or listed (only the
                        records named retried, the others committed, as SQS does); AWS does not say
                        which a Kafka trigger follows, so the run must pass under both; same cost
  --park                the command side under policy park (COMMAND_FAILURE_POLICY=park) with a bug that
                        throws on poisoned commands; after every other fault, two aggregates are parked,
                        one released with the fixed code (crashing half way once, run again, a command
                        arriving meanwhile), the other discarded; their final outcomes are checked
  --keep                keep the run's topics and tables (kept anyway when something is wrong): they
                        stay on the broker and the emulator until deleted

Exit codes: 0 no violation and no event lost, 1 otherwise, 2 error or refused.`;

const options = {
  commands: { type: 'string', default: '1000' },
  accounts: { type: 'string', default: '100' },
  seed: { type: 'string' },
  rate: { type: 'string', default: '400' },
  'fault-rate': { type: 'string', default: '0.3' },
  outage: { type: 'string', default: '5' },
  'large-every': { type: 'string', default: '250' },
  skip: { type: 'string', default: '' },
  'restart-broker': { type: 'boolean', default: false },
  'no-table-loss': { type: 'boolean', default: false },
  'emulator-port': { type: 'string', default: '8011' },
  'partial-response': { type: 'string', default: 'checkpoint' },
  keep: { type: 'boolean', default: false },
  park: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h' },
} as const;

/** What is wrong with the command line, and where the usage is (as every script says it: script-options.ts); exit 2. */
const usage = (message: string): never => {
  console.error(`chaos: ${message}\nSee \`npm run chaos -- --help\`.`);
  process.exit(2);
};

const { values } = (() => {
  try {
    return parseArgs({ options });
  } catch (error) {
    // An unknown option or a stray argument: said, with where the usage is, not thrown.
    return usage(parseArgsMessage(error, process.argv.slice(2)));
  }
})();

const n = (value: number): string => value.toLocaleString('en');

const print = (report: ChaosReport, replay: string): void => {
  const width = Math.max(...FAULT_KINDS.map((k) => k.length));
  const lines = [
    '',
    `chaos run ${report.runId}`,
    `seed        ${report.seed}   replay: ${replay}`,
    `commands    ${n(report.sent)} sent (${n(report.resent)} re-sent commandIds): ${n(report.accepted)} accepted, ${n(report.rejected)} rejected ` +
      `(${Object.entries(report.rejections)
        .sort(([, a], [, b]) => b - a)
        .map(([code, count]) => `${code} ${n(count)}`)
        .join(', ')})`,
    'faults',
    ...FAULT_KINDS.map((k) => `  ${k.padEnd(width)} ${n(report.faults[k] ?? 0).padStart(6)}`),
    `effects     ${n(report.effects.partialBatches)} partial batches (a head that did not fit one write), ${n(report.effects.publishedInChunks)} batches whose events went out in chunks`,
    ...report.notes.map((note) => `  ${note}`),
    ...report.skipped.map((s) => `skipped     ${s}`),
    `invocations ${n(report.invocations.ok)} ok; failed and retried: ${
      Object.entries(report.invocations.failed)
        .map(([name, count]) => `${name} ${n(count)}`)
        .join(', ') || 'none'
    }`,
    ...formatReport(report.check, 20),
    `outcomes    ${n(report.mismatches.length)} command(s) whose results differ from the in-order decision, ${n(report.missingResults)} without any result`,
    ...report.mismatches
      .slice(0, 10)
      .map((m) => `  ${m.aggregateId} ${m.commandId}: expected ${JSON.stringify(m.expected)}, got ${JSON.stringify(m.actual)}`),
    `events lost ${n(report.eventsLost)}`,
    `quiescent   ${report.quiescent ? 'yes (every command has a result, consumer lag 0)' : 'NO: timed out waiting'}`,
    `duration    ${(report.durationMs / 1000).toFixed(1)} s`,
    `runtime log ${report.runtimeLog}`,
    report.names.kept
      ? `kept        topics ${report.names.topics.join(', ')}; tables ${report.names.tables.join(', ')}`
      : "cleaned up  the run's topics and tables are deleted",
  ];
  for (const line of lines) console.log(line);
};

/** The topology's trigger groups that have members on the broker: a running `npm start` (or another system) is using it. */
const systemOnBroker = async (): Promise<string[]> => {
  const admin = createKafka('kafka-aggregates-chaos-check').admin();
  await admin.connect();
  try {
    const { groups } = await admin.describeGroups(mappingsFromTopology().map((m) => m.consumerGroupId));
    return groups.filter((g) => g.members.length > 0).map((g) => `${g.groupId} (${g.members.length})`);
  } finally {
    await admin.disconnect();
  }
};

/** The run's options as numbers; undefined, once it has said why, when one is out of range. */
const parseRun = () => {
  const seed = values.seed === undefined ? randomInt(1, 2 ** 31 - 1) : Number(values.seed);
  const commands = Number(values.commands);
  const accounts = Number(values.accounts);
  const rate = Number(values.rate);
  const outage = Number(values.outage);
  const largeEvery = Number(values['large-every']);
  const faultRate = Number(values['fault-rate']);
  const skip = values.skip
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const unknown = skip.filter((s) => !(INFRASTRUCTURE_FAULTS as readonly string[]).includes(s));
  if (
    ![seed, commands, accounts, rate, outage].every((v) => Number.isSafeInteger(v) && v > 0) ||
    !(Number.isSafeInteger(largeEvery) && largeEvery >= 0) ||
    !(faultRate >= 0 && faultRate <= 1) ||
    unknown.length > 0 ||
    !['checkpoint', 'listed'].includes(values['partial-response'])
  ) {
    return usage(
      `--commands, --accounts, --rate, --outage and --seed must be positive whole numbers, --large-every a whole number, --fault-rate in [0, 1]` +
        `, --partial-response checkpoint or listed` +
        `${unknown.length > 0 ? `, and --skip names of ${INFRASTRUCTURE_FAULTS.join(', ')} (not ${unknown.join(', ')})` : ''}`,
    );
  }
  return { seed, commands, accounts, rate, outage, largeEvery, faultRate, skip };
};

/** The command line that runs the same again. */
const replayLine = (run: NonNullable<ReturnType<typeof parseRun>>): string => {
  const { seed, commands, accounts, rate, outage, largeEvery, faultRate, skip } = run;
  return [
    'npm run chaos --',
    `--seed ${seed} --commands ${commands} --accounts ${accounts} --rate ${rate} --fault-rate ${faultRate} --outage ${outage} --large-every ${largeEvery}`,
    skip.length > 0 ? `--skip ${skip.join(',')}` : '',
    values['restart-broker'] ? '--restart-broker' : '',
    values['no-table-loss'] ? '--no-table-loss' : '',
    values['partial-response'] === 'checkpoint' ? '' : `--partial-response ${values['partial-response']}`,
    values.park ? '--park' : '',
  ]
    .filter((s) => s !== '')
    .join(' ');
};

/** The run's DynamoDB, and how it loses its tables. */
const dynamoOfRun = async (): Promise<{ emulator: OwnEmulator | undefined; tableLoss: TableLoss }> => {
  // The emulator restart and the hard kill lose every table of the emulator: the run brings its own, unless told to use an endpoint.
  let emulator: OwnEmulator | undefined;
  let tableLoss: TableLoss = values['no-table-loss'] ? 'none' : 'drop-tables';
  if (configuredEndpoint('DYNAMODB') === undefined) {
    emulator = await startOwnEmulator(Number(values['emulator-port']));
    if (tableLoss !== 'none') tableLoss = 'restart-emulator';
    console.log(`chaos: DynamoDB is a moto server of the run's own at ${emulator.endpoint}, restarted and killed mid-run`);
  } else
    console.log(
      `chaos: DynamoDB is ${configuredEndpoint('DYNAMODB')}: the emulator is not ours to restart; the run deletes and recreates its tables instead, and the hard kill spares it`,
    );
  return { emulator, tableLoss };
};

const main = async (): Promise<number> => {
  if (values.help === true) {
    console.log(help);
    return 0;
  }
  const run = parseRun();
  const { seed, commands, accounts, rate, outage, largeEvery, faultRate, skip } = run;
  const replay = replayLine(run);
  console.log(`chaos: seed ${seed}; replay with: ${replay}`);

  // The broker is the local stack's: started here when it is not running, and stopped at the end if it was.
  const stack = await startStack({ only: ['kafka'], log: (line) => console.log(`chaos: ${line}`) });
  const restartBroker = values['restart-broker'];
  const users = restartBroker ? await systemOnBroker() : [];
  if (users.length > 0) {
    console.error(
      `chaos: --restart-broker would stop the broker that npm start is using (its trigger groups have members: ${users.join(', ')}).\n` +
        'Stop npm start first, or run without --restart-broker: the run then leaves the broker alone.',
    );
    await stack.stop();
    return 2;
  }

  const { emulator, tableLoss } = await dynamoOfRun();
  // Ctrl-C: the runtime process ends with this one (its IPC channel closes); the emulator is detached and must be stopped.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      console.error(`\nchaos: ${signal}: stopping the run's emulator; the run's topics and tables are kept`);
      void (emulator?.stop() ?? Promise.resolve()).finally(() => process.exit(130));
    });
  const brokerFaults: readonly InfrastructureFault[] = ['broker-restart', 'kafka-outage'];
  const faults = INFRASTRUCTURE_FAULTS.filter((f) => !skip.includes(f) && (restartBroker || !brokerFaults.includes(f)));
  try {
    const report = await runChaos({
      commands,
      accounts,
      seed,
      rate,
      faults,
      outageMs: outage * 1000,
      largeEvery,
      partialResponse: values['partial-response'] as PartialResponseReading,
      tableLoss,
      spareBroker: !restartBroker,
      ...(emulator === undefined ? {} : { emulator }),
      rates: { invocation: faultRate, throttle: 0.02, storm: 0.002 },
      keep: values.keep,
      park: values.park,
      log: (line) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`),
    });
    print(report, replay);
    return report.check.violations.length === 0 && report.eventsLost === 0 && report.mismatches.length === 0 && report.quiescent ? 0 : 1;
  } finally {
    await emulator?.stop();
    await stack.stop();
  }
};

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(2);
  },
);
