/** `kafka-aggregates rebuild`: the snapshot rebuild (or verify, a projection's or the read models' rebuild), with a progress bar. */
import { functions } from '../../functions/topology.ts';
import { composeRebuild } from '../../functions/compose/rebuild.ts';
import { createKafka } from '../../functions/compose/operator.ts';
import { projections } from '../../functions/projections/index.ts';
import { adoptGenerations } from '../generations.ts';
import { readStatus } from '../trigger/status.ts';
import type { Progress } from '../../functions/rebuild/rebuild-aggregates.ts';
import { explain, parseOptions, requireBroker, usageError, type CliCommand } from './common.ts';

const help = `Usage: kafka-aggregates rebuild [--verify] [--projection <name>] [--read-models] [--versions]

Rebuilds the aggregates table from the events topic: takes the rebuild lock (commands are
held: the command handler refuses to decide until the rebuild has caught up), publishes any
unconfirmed outbox, reads the topic from the earliest offset to the end offsets captured at
the start, writes the heads, and releases the lock. A rebuild that stopped midway resumes.

Options:
  --verify              compare the table with the topic and list the aggregates that differ, and the
                        parked ones (a parked command its head holds as decided is a difference); writes nothing
  --projection <name>   rebuild that projection's rows instead (e.g. account-summary), up to where the event
                        trigger stands, holding the whole event side meanwhile as --read-models does (every
                        projection and reaction waits, then goes on from there); of a projection with
                        versions, the one serving reads and the one being built beside it (its catch-up
                        goes on from the rebuild's end), never one dropped at a switch
  --read-models         rebuild every projection and reaction checkpoint instead, up to where the event
                        trigger stands (its consumer group's committed offsets), holding the event side
                        meanwhile; replayed events issue no command. With npm start running here, it
                        first waits out an event batch in flight (the event function's timeout).
                        An event park missing records of its sequence is lifted, its events replayed,
                        and listed (partialParks in the report, a line on stderr)
  --versions            catch up each projection version the code registers past the one serving reads,
                        beside it, while the event side goes on (npm start); switch reads to it once
                        caught up and drop the old version's rows (docs/CHANGING-EVENTS.md). Progress:
                        \`kafka-aggregates status\`
  -h, --help            show this help

Exit codes: 0 done (verify: no difference), 1 verify found differences, or the log has gaps
or events the code cannot read (listed as unusable), 2 error.

Examples:
  kafka-aggregates rebuild
  kafka-aggregates rebuild --verify
  kafka-aggregates rebuild --projection account-summary
  kafka-aggregates rebuild --read-models
  kafka-aggregates rebuild --versions`;

/** A one-line progress bar on a terminal; a line every few seconds otherwise. */
export const progressBar = () => {
  let last = 0;
  const tty = process.stderr.isTTY;
  return {
    update(p: Progress) {
      const now = Date.now();
      if (p.phase === 'reading' && now - last < (tty ? 100 : 5_000)) return;
      last = now;
      const fraction = p.eventsTotal === 0 ? 1 : Math.min(1, p.eventsRead / p.eventsTotal);
      const width = 30;
      const bar = '█'.repeat(Math.round(fraction * width)).padEnd(width, '░');
      const line = `${p.phase.padEnd(17)} ${bar} ${p.eventsRead.toLocaleString('en')}/${p.eventsTotal.toLocaleString('en')} events`;
      if (tty) process.stderr.write(`\r${line}`);
      else process.stderr.write(`${line}\n`);
    },
    end() {
      if (tty) process.stderr.write('\n');
    },
  };
};

/** The `rebuild` command. */
export const rebuild: CliCommand = {
  name: 'rebuild',
  summary: 'rebuild the aggregates table (or a projection) from the events topic; --verify compares only',
  help,
  async run(args) {
    const values = parseOptions('rebuild', help, args, {
      verify: { type: 'boolean' },
      projection: { type: 'string' },
      'read-models': { type: 'boolean' },
      versions: { type: 'boolean' },
    });
    if (values === undefined) return 0;
    const readModels = values['read-models'] === true;
    if (values.verify === true && (values.projection !== undefined || readModels))
      throw usageError('rebuild', '--verify applies to the aggregates table only');
    if (readModels && values.projection !== undefined) throw usageError('rebuild', 'give --projection or --read-models, not both');
    const known = projections.map((p) => p.name);
    if (values.projection !== undefined && !known.includes(values.projection))
      throw usageError('rebuild', `unknown projection ${JSON.stringify(values.projection)}; known: ${known.join(', ')}`);
    const versions = values.versions === true;
    if (versions && (readModels || values.projection !== undefined || values.verify === true))
      throw usageError('rebuild', '--versions runs alone');
    // The live event trigger (npm start) may hold a batch that read the tables before the hold (or the state before a switch: the drop waits it out).
    if ((versions || readModels || values.projection !== undefined) && readStatus() !== undefined)
      process.env.READ_MODELS_DRAIN_SECONDS ??= String(functions.eventHandler.timeoutSeconds);
    await requireBroker();
    const bar = progressBar();
    // Every generation of the keyed topics the broker has (after `kafka-aggregates grow`): the rebuild reads them all.
    const admin = createKafka('kafka-aggregates-rebuild').admin();
    await admin.connect();
    await adoptGenerations(admin).finally(() => admin.disconnect());
    const rebuild = composeRebuild();
    try {
      const report = await rebuild
        .run(
          {
            mode: values.verify === true ? 'verify' : 'rebuild',
            ...(values.projection === undefined ? {} : { projection: values.projection }),
            ...(readModels ? { readModels: true } : {}),
            ...(versions ? { versions: true } : {}),
          },
          {
            onProgress: (p) => bar.update(p),
            versions: {
              onProgress: (name, p) => bar.update({ phase: 'reading', eventsRead: p.eventsRead, eventsTotal: p.eventsTotal }),
              log: (message, fields) => process.stderr.write(`\n${message} ${JSON.stringify(fields)}\n`),
            },
            log: (message, fields) => process.stderr.write(`\n${message} ${JSON.stringify(fields)}\n`),
          },
        )
        .catch((error: unknown) => {
          throw explain(error);
        });
      bar.end();
      console.log(JSON.stringify(report, null, 2));
      if ('differences' in report) return report.differences.length > 0 || report.gaps.length > 0 || report.unusable.length > 0 ? 1 : 0;
      if ('gaps' in report) return report.gaps.length > 0 || ('unusable' in report && report.unusable.length > 0) ? 1 : 0;
      // A read-model replay counts what it could not use; what an item refused it flags, as the live side does.
      return 'unusable' in report && typeof report.unusable === 'number' && report.unusable > 0 ? 1 : 0;
    } finally {
      await rebuild.close();
    }
  },
};
