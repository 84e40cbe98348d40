/** `kafka-aggregates status`: every trigger's lag per partition, and which partitions are blocked. */
import type { Admin } from 'kafkajs';
import { createKafka } from '../../functions/compose/operator.ts';
import { splitGeneration } from '../../functions/core/generations.ts';
import { adoptGenerations } from '../generations.ts';
import { allGenerations, mappingsFromTopology, type TriggerMapping } from '../trigger/mappings.ts';
import { readStatus, type TriggerStatus } from '../trigger/status.ts';
import { explain, parseOptions, requireBroker, type CliCommand } from './common.ts';
import { parkedLines, readParked } from './park.ts';
import { readVersions, versionLines } from './versions.ts';

const help = `Usage: kafka-aggregates status [--json]

For every function of the topology that a topic triggers, one line per generation of its
topic (after \`kafka-aggregates grow\`: which, and whether an older one is drained): its
consumer group and, per partition, the committed offset, the end offset and the lag (records not yet handled).
When \`npm start\` runs the triggers on this machine, also the lag in time (the age of the
oldest record of the partition's last batch when it was invoked, the handlers'
\`oldestRecordAgeMs\` metric on AWS), which triggers run (and which are held while a
rebuild catches a table up) and which partitions are blocked: a
batch that fails for infrastructure reasons is retried until it succeeds and its partition
waits meanwhile (block, never skip); an events partition halted at a gap or at an event the
code cannot read is retried from that record. The line says since when, after how many
attempts and the last error: for a halt, the offset and why (EventGapError naming the
projection, aggregate and versions; EventChainError naming the aggregate, version, event type
and revision). A partition that stays blocked on a record that can never be handled is
released only by an explicit act: see \`kafka-aggregates skip --help\`. Last, the parked
aggregates (policy \`park\`): cause, first offset, records and age; see \`release --help\`.
Then each projection with versions: the version that serves reads and, while a new version
is built beside it, its catch-up: events applied and to go, partitions the live side has
joined, the rate and the time to done (docs/CHANGING-EVENTS.md).

Options:
  --json       print the whole status as JSON
  -h, --help   show this help

Exit codes: 0 nothing blocked, 1 a partition is blocked, 2 error.`;

/** One partition of one trigger. */
interface PartitionStatus {
  readonly partition: number;
  /** Next offset the trigger will deliver (its group's committed offset), null before its first commit. */
  readonly committed: number | null;
  readonly end: number;
  readonly lag: number;
  readonly blocked?: { readonly offset: number; readonly since: string; readonly attempts: number; readonly error: string };
  /** Lag in time: the age of the oldest record of the partition's last batch, and when that batch was invoked. */
  readonly oldestRecordAge?: { readonly ms: number; readonly at: string };
}

/** `1.2s`, `3m05s`: a record age for humans. */
const age = (ms: number): string =>
  ms < 60_000 ? `${(ms / 1000).toFixed(1)}s` : `${Math.floor(ms / 60_000)}m${String(Math.floor((ms % 60_000) / 1000)).padStart(2, '0')}s`;

/** One trigger's partitions: committed and end offsets and lag from the broker, and what `npm start` says of them when it runs here. */
const triggerStatus = async (admin: Admin, local: TriggerStatus | undefined, m: TriggerMapping) => {
  const [ends, [group]] = await Promise.all([
    admin.fetchTopicOffsets(m.topic),
    admin.fetchOffsets({ groupId: m.consumerGroupId, topics: [m.topic] }),
  ]);
  const partitions: PartitionStatus[] = ends
    .sort((a, b) => a.partition - b.partition)
    .map((e) => {
      const at = Number(group?.partitions.find((p) => p.partition === e.partition)?.offset ?? -1);
      const committed = at < 0 ? null : at;
      const end = Number(e.high);
      const here = (x: { functionName: string; partition: string }): boolean =>
        x.functionName === m.functionName && x.partition === `${m.topic}-${e.partition}`;
      const blocked = local?.blocked.find(here);
      const recordAge = local?.recordAges?.find(here);
      return {
        partition: e.partition,
        committed,
        end,
        lag: Math.max(0, end - Math.max(committed ?? 0, Number(e.low))),
        ...(recordAge === undefined ? {} : { oldestRecordAge: { ms: recordAge.ageMs, at: new Date(recordAge.at).toISOString() } }),
        ...(blocked === undefined
          ? {}
          : {
              blocked: {
                offset: blocked.offset,
                since: new Date(blocked.since).toISOString(),
                attempts: blocked.attempts,
                error: blocked.error,
              },
            }),
      };
    });
  return { functionName: m.functionName, topic: m.topic, consumerGroupId: m.consumerGroupId, partitions };
};

/** Prints one line per trigger (with its generation, and whether an older one is drained), then one per partition. */
const printTriggers = (report: readonly Awaited<ReturnType<typeof triggerStatus>>[]): void => {
  const newest = new Map<string, number>();
  for (const f of report) newest.set(f.functionName, Math.max(newest.get(f.functionName) ?? 0, splitGeneration(f.topic).index));
  for (const f of report) {
    const { index } = splitGeneration(f.topic);
    // An older generation is drained when its trigger has handled it to the end: the newer one decides only then.
    const generation =
      (newest.get(f.functionName) ?? 0) === 0
        ? ''
        : `, generation ${index + 1} of ${(newest.get(f.functionName) ?? 0) + 1}, ${f.partitions.length} partitions` +
          (index === newest.get(f.functionName) ? '' : f.partitions.every((p) => p.lag === 0) ? ', drained' : ', NOT drained yet');
    console.log(`${f.functionName} <- ${f.topic} (group ${f.consumerGroupId}${generation})`);
    for (const p of f.partitions) {
      const line =
        `  ${`${f.topic}-${p.partition}`.padEnd(24)} committed ${String(p.committed ?? '-').padStart(8)}  end ${String(p.end).padStart(8)}  lag ${String(p.lag).padStart(6)}` +
        (p.oldestRecordAge === undefined
          ? ''
          : `  oldest record ${age(p.oldestRecordAge.ms)} old at its batch (${p.oldestRecordAge.at.slice(11, 19)})`);
      console.log(
        p.blocked === undefined
          ? line
          : `${line}  BLOCKED at offset ${p.blocked.offset} since ${p.blocked.since} (${p.blocked.attempts} attempts): ${p.blocked.error}`,
      );
    }
  }
};

/** The `status` command. */
export const status: CliCommand = {
  name: 'status',
  summary: "each trigger's lag per partition, and the partitions that are blocked",
  help,
  async run(args) {
    const values = parseOptions('status', help, args, { json: { type: 'boolean' } });
    if (values === undefined) return 0;
    await requireBroker();
    const local = readStatus();
    const admin = createKafka('kafka-aggregates-status').admin();
    try {
      await admin.connect();
      await adoptGenerations(admin);
      const report = await Promise.all(allGenerations(mappingsFromTopology()).map((m) => triggerStatus(admin, local, m))).catch(
        (error: unknown) => {
          throw explain(error);
        },
      );
      const anyBlocked = report.some((f) => f.partitions.some((p) => p.blocked !== undefined));
      const parked = await readParked();
      if (values.json === true) {
        const versions = await readVersions();
        console.log(
          JSON.stringify(
            {
              triggersRunningHere: local !== undefined,
              triggers: local?.triggers ?? [],
              functions: report,
              parked,
              projectionVersions: versions,
            },
            null,
            2,
          ),
        );
        return anyBlocked ? 1 : 0;
      }
      printTriggers(report);
      const running = (local?.triggers ?? []).map(
        (t) => `${t.functionName} <- ${t.topic}${t.paused ? ' (held: a rebuild is catching its table up)' : ''}`,
      );
      console.log(
        local === undefined
          ? "\nNo triggers run on this machine (npm start is not running): lag only. On AWS, see the OffsetLag alarms and the functions' logs."
          : `\nTriggers run here (npm start, pid ${local.pid}): ${running.length > 0 ? running.join(', ') : 'starting'}; ` +
              `${anyBlocked ? 'a partition is blocked: it goes on when its batch succeeds, or see `kafka-aggregates skip --help`' : 'no partition is blocked'}.`,
      );
      if ('error' in parked) console.log(`\nParked aggregates: could not read the aggregates table (${parked.error}).`);
      else if (parked.parked.length > 0)
        console.log(
          ['\nParked aggregates (policy park; see `kafka-aggregates release --help`):', ...parkedLines(parked.parked)].join('\n'),
        );
      if (!('error' in parked) && parked.lost.length > 0)
        console.log(
          [
            '\nIn the park index without their parked aggregate (a lift under way or cut short: the next command drops it; ' +
              'or a park a table restore or copy lost: its parked commands are never decided, see docs/OPERATIONS.md "Restoring the aggregates table"):',
            ...parked.lost.map((l) => `  ${l}`),
          ].join('\n'),
        );
      const versions = await readVersions();
      if ('error' in versions) console.log(`\nProjection versions: could not read the read-models table (${versions.error}).`);
      else if (versions.versions.length > 0) console.log(['\nProjection versions:', ...versionLines(versions.versions)].join('\n'));
      return anyBlocked ? 1 : 0;
    } finally {
      await admin.disconnect();
    }
  },
};
