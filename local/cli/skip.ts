/**
 * `kafka-aggregates skip`: the operator's explicit, recorded way out of a partition that stays
 * blocked on records that can never be handled (core/release.ts).
 */
import { hostname, userInfo } from 'node:os';
import type { Admin } from 'kafkajs';
import { composeOperator, type Operator, type ReleaseList } from '../../functions/compose/operator.ts';
import { topicName } from '../../functions/config.ts';
import type { Release, ReleaseAction } from '../../functions/core/release.ts';
import { sampledOf, type SampledRecord } from '../../functions/heads/partition.ts';
import { mappingsFromTopology } from '../trigger/mappings.ts';
import { CliError, explain, explainDynamo, parse, requireBroker, usageError, type CliCommand } from './common.ts';

const help = `Usage: kafka-aggregates skip <topic> <partition> <offset>[..<last>] --reason "<why>" [--pass-gap | --discard <type>#<id>]

A batch that fails for infrastructure reasons is retried until it succeeds, and its partition
waits (block, never skip): an outage passes by itself. Use this only when a partition stays
blocked on a record that can never be handled (see \`kafka-aggregates status\` and the
function's log for the error), after fixing what can be fixed.

Records the release in the table of the function that the topic triggers; at its next attempt
that function does not handle the records at those offsets: each goes to the dead-letter topic
with reason code SkippedByOperator, your reason, who and when (a command also gets a rejected
result with that reason), and the partition goes on. Nothing else is skipped.

  --pass-gap   events topic only: apply the event at <offset> although versions before it are
               missing (the gap is flagged on the projection rows and reaction checkpoints, as
               under skip-and-flag), for a partition halted on a gap that cannot be filled
  --discard    commands topic only: record again a discard of that aggregate's parked commands
               at those offsets (policy park), lost by a table restored from before it; its
               records are dead-lettered DiscardedByOperator, the range's other records untouched
  --reason     why; required, kept with the release and in every dead letter it causes
  -h, --help   show this help

Examples:
  kafka-aggregates skip commands 1 4711 --reason "poison record, ticket OPS-42"
  kafka-aggregates skip events 0 1200..1203 --reason "events written by a buggy producer"

Exit codes: 0 recorded, 2 error (nothing recorded).`;

const RANGE = /^(\d+)(?:\.\.(\d+))?$/;

/** The function the topic triggers and the releases it reads. */
const releasesFor = (
  topic: string,
  operator: Operator,
): {
  functionName: string;
  groupId: string;
  list: ReleaseList;
  passGap: boolean;
  /** The partition's current incarnation (commands topic), which the release is bound to. */
  incarnation?: (tp: string) => Promise<number>;
  /** The record at the release's first offset (commands topic): the life of the topic the release is meant for. */
  anchor?: (partition: number, offset: number) => Promise<SampledRecord | undefined>;
} => {
  const mapping = mappingsFromTopology().find((m) => m.topic === topic);
  if (mapping === undefined)
    throw usageError(
      'skip',
      `no function is triggered by topic ${topic}; the triggered topics are ${mappingsFromTopology()
        .map((m) => m.topic)
        .join(', ')}`,
    );
  if (topic === topicName('commands')) {
    const table = operator.heads;
    return {
      functionName: mapping.functionName,
      groupId: mapping.consumerGroupId,
      list: table.releases,
      passGap: false,
      incarnation: async (tp) => (await table.getCheckpoint(tp))?.incarnation ?? 1,
      anchor: async (partition, offset) => {
        const log = operator.log(topic);
        try {
          const [record] = await log.sample(partition, offset, offset, 1);
          return record?.offset === offset ? sampledOf(record) : undefined;
        } finally {
          await log.close();
        }
      },
    };
  }
  if (topic === topicName('events'))
    return {
      functionName: mapping.functionName,
      groupId: mapping.consumerGroupId,
      list: operator.readModels.releases,
      passGap: true,
    };
  throw usageError('skip', `the function on topic ${topic} keeps no releases`);
};

/** Refuses offsets the trigger has handled already or that do not exist yet. */
const checkOffsets = async (admin: Admin, topic: string, partition: number, groupId: string, from: number, to: number): Promise<void> => {
  const ends = await admin.fetchTopicOffsets(topic);
  const end = ends.find((e) => e.partition === partition);
  if (end === undefined) throw usageError('skip', `topic ${topic} has no partition ${partition} (it has ${ends.length})`);
  if (to >= Number(end.high))
    throw usageError('skip', `${topic}-${partition} ends at offset ${Number(end.high) - 1}; ${to} does not exist yet`);
  const [group] = await admin.fetchOffsets({ groupId, topics: [topic] });
  const committed = Number(group?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
  if (committed >= 0 && to < committed)
    throw usageError(
      'skip',
      `${topic}-${partition} is handled up to offset ${committed - 1} (group ${groupId}): offsets ${from}..${to} need no release`,
    );
};

/** The `skip` command. */
export const skip: CliCommand = {
  name: 'skip',
  summary: 'release a blocked partition: dead-letter exactly the given records, with a reason',
  help,
  async run(args) {
    const { values, positionals } = parse('skip', args, {
      reason: { type: 'string' },
      'pass-gap': { type: 'boolean' },
      discard: { type: 'string' },
    });
    if (values.help === true) {
      console.log(help);
      return 0;
    }
    const [topic, partitionText, offsets, ...extra] = positionals;
    if (topic === undefined || partitionText === undefined || offsets === undefined || extra.length > 0)
      throw usageError('skip', 'skip needs exactly <topic> <partition> <offset>[..<last>]');
    const partition = Number(partitionText);
    if (!Number.isInteger(partition) || partition < 0) throw usageError('skip', `<partition> must be a whole number, not ${partitionText}`);
    const range = RANGE.exec(offsets);
    if (range === null) throw usageError('skip', `<offset> must be a whole number or a range like 10..12, not ${offsets}`);
    const from = Number(range[1]);
    const to = Number(range[2] ?? range[1]);
    if (to < from) throw usageError('skip', `the range ${offsets} ends before it starts`);
    const reason = values.reason?.trim() ?? '';
    if (reason === '') throw usageError('skip', '--reason is required: say why, it is kept with the release and in every dead letter');
    const discarded = values.discard;
    if (discarded !== undefined && !/^[^#]+#.+$/.test(discarded))
      throw usageError('skip', `--discard names an aggregate as <type>#<id>, not ${discarded}`);
    if (discarded !== undefined && values['pass-gap'] === true) throw usageError('skip', '--discard and --pass-gap exclude each other');
    const action: ReleaseAction = values['pass-gap'] === true ? 'pass-gap' : discarded !== undefined ? 'discard' : 'skip';

    await requireBroker();
    const operator = composeOperator('kafka-aggregates-skip');
    const admin = operator.kafka.admin();
    try {
      const target = releasesFor(topic, operator);
      if (action === 'pass-gap' && !target.passGap) throw usageError('skip', '--pass-gap applies to the events topic only');
      if (action === 'pass-gap' && from !== to) throw usageError('skip', '--pass-gap takes one offset: the event that meets the gap');
      if (action === 'discard' && target.incarnation === undefined)
        throw usageError('skip', '--discard applies to the commands topic only');
      await admin.connect();
      await checkOffsets(admin, topic, partition, target.groupId, from, to).catch((error: unknown) => {
        throw explain(error);
      });
      const tp = `${topic}-${partition}`;
      const incarnation = await target.incarnation?.(tp).catch((error: unknown) => {
        throw explainDynamo(error);
      });
      const anchor = await target.anchor?.(partition, from).catch((error: unknown) => {
        throw explain(error);
      });
      const release: Release = {
        action,
        from,
        to,
        reason,
        by: `${userInfo().username}@${hostname()}`,
        at: new Date().toISOString(),
        ...(discarded === undefined ? {} : { aggregate: discarded }),
        ...(incarnation === undefined ? {} : { incarnation }),
        ...(anchor === undefined ? {} : { anchor }),
      };
      await target.list.add(tp, release).catch((error: unknown) => {
        throw explainDynamo(error);
      });
      console.log(JSON.stringify({ recorded: release, partition: tp, table: target.list.tableName }));
      console.error(
        action === 'skip'
          ? `${target.functionName} dead-letters ${tp} offsets ${from}..${to} (SkippedByOperator) at its next attempt, and the partition goes on.`
          : action === 'discard'
            ? `${target.functionName} dead-letters ${discarded}'s records at ${tp} offsets ${from}..${to} (DiscardedByOperator) when delivered again.`
            : `${target.functionName} applies the event at ${tp}@${from} across its gap (flagged on the items) at its next attempt.`,
      );
      return 0;
    } catch (error) {
      if (error instanceof CliError) throw error;
      throw explain(error);
    } finally {
      await admin.disconnect().catch(() => undefined);
      operator.close();
    }
  },
};
