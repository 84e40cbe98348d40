/**
 * The invariants, checked on the world as it stands: the chaos run's checker
 * (local/verify/invariants.ts) over the events and results topics (and, once quiescent, the
 * heads and the account-summary rows); the in-order decision of every command (oracle.ts);
 * and that no record passed without a release on record (every SkippedByOperator dead
 * letter, and every dead letter of an event, which the command side alone writes, lies in a
 * release the operator recorded for that life of its topic).
 */
import type { StoredRecord } from '../functions/adapters/memory/cluster.ts';
import { FORWARDED_FROM, splitGeneration } from '../functions/core/generations.ts';
import { SKIPPED_BY_OPERATOR } from '../functions/core/release.ts';
import type { CommandEnvelope, DeadLetterRecord, EventRecord, ResultRecord } from '../functions/core/wire.ts';
import { parse } from '../local/verify/check-events.ts';
import { commandKey } from '../local/verify/check-results.ts';
import { checkHistory, type SummaryRow, type TopicRecord } from '../local/verify/invariants.ts';
import { DISCARDED_BY_OPERATOR } from '../functions/park/parked.ts';
import { reactions } from '../functions/reactions/index.ts';
import { censusViolations } from './census-check.ts';
import { checkDiscards } from './park.ts';
import { deployments } from './code-versions.ts';
import { compareWithDecisions, decideInOrder, type OrderedCommand } from './oracle.ts';
import { servedSummary, versionViolations } from './versions.ts';
import { TOPICS, type World } from './world.ts';

/** One broken invariant. */
export interface SimViolation {
  readonly kind: string;
  readonly message: string;
}

const text = (r: StoredRecord & { readonly topic?: string }): TopicRecord => ({
  topic: r.topic ?? '',
  partition: r.partition,
  offset: r.offset,
  timestamp: r.timestamp,
  key: r.key?.toString('utf8') ?? null,
  value: r.value?.toString('utf8') ?? null,
});

/** Every record of a topic's current life, partition by partition. */
export const recordsOf = (world: World, topic: string): StoredRecord[] => world.cluster.current(topic).partitions.flat();

/** Every record of every generation of the events topic (its current life), each with its generation's topic. */
export const eventRecords = (world: World): (StoredRecord & { readonly topic: string })[] =>
  world.eventTriggers.flatMap((t) => recordsOf(world, t.topic).map((r) => ({ ...r, topic: t.topic })));

/** Dead letters: which record of which life, and why. */
const deadLetters = (world: World) =>
  recordsOf(world, TOPICS.deadLetter).map((r) => {
    const letter = JSON.parse(r.value?.toString('utf8') ?? '{}') as DeadLetterRecord;
    const { topic, partition, offset, timestamp } = letter.source;
    const life = world.cluster
      .lives(topic)
      .find((l) => l.partitions[partition]?.some((s) => s.offset === offset && s.timestamp === timestamp))?.life;
    const key = letter.key === null ? null : Buffer.from(letter.key, 'base64').toString('utf8');
    return { topic, partition, offset, life, code: letter.reason.code, key };
  });

/** No record passed without a release: skips and event dead letters lie in a release recorded for their life. */
const checkReleases = (world: World): SimViolation[] =>
  deadLetters(world).flatMap((d) => {
    if (d.code !== SKIPPED_BY_OPERATOR && splitGeneration(d.topic).base !== TOPICS.events) return [];
    const covered = world.releases.some(
      (r) =>
        r.topic === d.topic &&
        r.partition === d.partition &&
        r.life === d.life &&
        r.action === 'skip' &&
        d.offset >= r.from &&
        d.offset <= r.to,
    );
    return covered
      ? []
      : [
          {
            kind: 'passed-without-release',
            message: `${d.topic}-${d.partition} offset ${d.offset} (life ${d.life}) dead-lettered ${d.code} with no release recorded for it`,
          },
        ];
  });

/**
 * The commands that crossed generations of the commands topic (by command key): a forwarded
 * copy, or one sent to an older generation after a newer one began (a stale producer's).
 */
const crossedCommands = (world: World): Set<string> =>
  new Set(
    world.commandTriggers.flatMap(({ topic }) => {
      const grown = world.grownAt.get(topic);
      return world.cluster.current(topic).partitions.flatMap((records, p) =>
        records.flatMap((r) => {
          if (r.headers?.[FORWARDED_FROM] === undefined && (grown === undefined || r.offset < (grown[p] ?? 0))) return [];
          const command = parse<Partial<CommandEnvelope>>(r.value?.toString('utf8') ?? null);
          return [commandKey(command?.aggregateType ?? '', command?.aggregateId ?? '', command?.commandId ?? '')];
        }),
      );
    }),
  );

/** The results topic by commandId. */
export const resultsByCommand = (world: World): Map<string, ResultRecord[]> => {
  const out = new Map<string, ResultRecord[]>();
  for (const r of recordsOf(world, TOPICS.results)) {
    const result = JSON.parse(r.value?.toString('utf8') ?? 'null') as ResultRecord | null;
    if (result?.commandId == null) continue;
    out.set(result.commandId, [...(out.get(result.commandId) ?? []), result]);
  }
  return out;
};

/**
 * The commands in the order the command side must decide them. Of a dead life, what its
 * trigger had committed, and beyond that, per aggregate, as far as the events show it was
 * decided (a batch that committed its head but not its offsets): the client sent those again, and a copy of
 * a command the old life decided is a duplicate, or a rejection decided again, after it.
 */
const orderedCommands = (world: World, committedAtEnd: ReadonlyMap<string, readonly number[]>): OrderedCommand[] => {
  const decided = new Set(
    eventRecords(world).flatMap((r) => {
      const event = JSON.parse(r.value?.toString('utf8') ?? '{}') as Partial<EventRecord>;
      return event.source === undefined
        ? []
        : [`${event.source.topic}/${event.source.partition}/${event.source.offset}/${event.occurredAt}`];
    }),
  );
  // A batch commits each aggregate on its own: that the events show one aggregate's record
  // decided says nothing of another's before it. Per aggregate, then (by its type and key).
  const aggregateOf = (r: StoredRecord): string => {
    let type: unknown;
    try {
      type = (JSON.parse(r.value?.toString('utf8') ?? '{}') as { aggregateType?: unknown }).aggregateType;
    } catch {
      // Not JSON: bad input, decided by its position alone.
    }
    return `${typeof type === 'string' ? type : ''}/${r.key?.toString('utf8') ?? ''}`;
  };
  const upToOf = (
    topic: string,
    records: readonly StoredRecord[],
    p: number,
    committed: number | undefined,
  ): ((r: StoredRecord) => number) => {
    if (committed === undefined) return () => Infinity;
    const byAggregate = new Map<string, number>();
    for (const r of records)
      if (decided.has(`${topic}/${p}/${r.offset}/${new Date(r.timestamp).toISOString()}`))
        byAggregate.set(aggregateOf(r), Math.max(byAggregate.get(aggregateOf(r)) ?? 0, r.offset + 1));
    return (r) => Math.max(committed, byAggregate.get(aggregateOf(r)) ?? 0);
  };
  const letteredAt = (code: string) =>
    new Set(
      deadLetters(world)
        .filter((d) => splitGeneration(d.topic).base === TOPICS.commands && d.code === code)
        .map((d) => `${d.topic}/${d.life}/${d.partition}/${d.offset}`),
    );
  const skippedAt = letteredAt(SKIPPED_BY_OPERATOR);
  const discardedAt = letteredAt(DISCARDED_BY_OPERATOR);
  // A command that reached a sealed generation is decided where the command side forwarded it
  // (every copy, in its place: a forward repeated after a crash is a duplicate), not where it came.
  const forwarded = new Set(
    world.commandTriggers.flatMap(({ topic }) =>
      world.cluster.lives(topic).flatMap((life) => life.partitions.flat().flatMap((r) => r.headers?.[FORWARDED_FROM] ?? [])),
    ),
  );
  // Generation after generation: a newer one decides nothing before the older ones are drained.
  return world.commandTriggers.flatMap(({ topic }) =>
    world.cluster.lives(topic).flatMap((life) =>
      life.partitions.flatMap((records, p) => {
        const upTo = upToOf(topic, records, p, committedAtEnd.get(`${topic}#${life.life}`)?.[p]);
        // A record under a release of its life that caused no event may have been skipped, its
        // dead letter lost when the batch failed after its results (and the life ended before the
        // redelivery): that answer may stand, and changes nothing. Past a dead life's trigger
        // position, the client sends the record again.
        const released = (record: StoredRecord) =>
          !decided.has(`${topic}/${p}/${record.offset}/${new Date(record.timestamp).toISOString()}`) &&
          world.releases.some(
            (r) =>
              r.topic === topic &&
              r.action === 'skip' &&
              r.life === life.life &&
              r.partition === p &&
              r.from <= record.offset &&
              record.offset <= r.to,
          );
        return records.flatMap((record) => {
          // Only the current life was sealed: an older generation is not recreated once a newer one exists.
          if (life.life === world.cluster.current(topic).life && forwarded.has(`${topic}-${p}@${record.offset}`)) return [];
          const skipped = skippedAt.has(`${topic}/${life.life}/${p}/${record.offset}`) || released(record);
          const discarded = discardedAt.has(`${topic}/${life.life}/${p}/${record.offset}`);
          return record.offset < upTo(record) || skipped || discarded
            ? [{ topic, record, skipped, discarded }]
            : [{ topic, record, skipped, discarded, unsure: true }];
        });
      }),
    ),
  );
};

/** Where a topic's current life stands: its records are append-only, so the same mark means the same records. */
const mark = (world: World, topic: string): string => {
  const { life, start, partitions } = world.cluster.current(topic);
  return `${life}:${partitions.map((records, p) => `${start[p]}+${records.length}`).join(',')}`;
};

/** Per world, the last mid-run check of the topics and what it found: a step that wrote nothing to them need not fold them again. */
const lastTopicCheck = new WeakMap<World, { readonly mark: string; readonly violations: readonly SimViolation[] }>();

/**
 * Checks the world. `quiescent`: nothing in flight, every record delivered: heads, rows and
 * outcomes are checked too. `committedAtEnd`: per dead life of the commands topic, where its
 * trigger stood when it was recreated.
 */
export const checkWorld = async (
  world: World,
  quiescent: boolean,
  committedAtEnd: ReadonlyMap<string, readonly number[]>,
): Promise<SimViolation[]> => {
  const heads = quiescent ? [...world.heads.dump().values()].flatMap((i) => (i.kind === 'head' ? [i.head] : [])) : undefined;
  // The rows that serve reads: version 2's once a projection version switch made it active (versions.ts).
  const served = servedSummary(world);
  const summaries: SummaryRow[] | undefined = quiescent
    ? [...world.readModels.dump().values()].flatMap((e) =>
        e.kind === 'item' && e.key.pk === served.pk ? [{ rowId: e.key.sk, data: e.item.data, versions: e.item.versions }] : [],
      )
    : undefined;
  const topics = `${world.eventTriggers.map((t) => mark(world, t.topic)).join('|')}|${mark(world, TOPICS.results)}`;
  const last = quiescent ? undefined : lastTopicCheck.get(world);
  let found = last?.mark === topics ? last.violations : undefined;
  if (found === undefined) {
    const report = checkHistory(
      {
        events: eventRecords(world).map(text),
        results: recordsOf(world, TOPICS.results).map(text),
        ...(heads === undefined ? {} : { heads }),
        ...(summaries === undefined ? {} : { summaries }),
        unfired: world.unfired,
        crossed: crossedCommands(world),
      },
      { aggregates: deployments.newer, readModel: served.projection, acceptsWithoutEvents: ['alert'], reactions, quiescent },
    );
    found = report.violations.map((v) => ({ kind: v.kind, message: `${v.aggregateType ?? ''} ${v.aggregateId ?? ''}: ${v.message}` }));
    if (!quiescent) lastTopicCheck.set(world, { mark: topics, violations: found });
  }
  const violations: SimViolation[] = [...found];
  violations.push(...checkReleases(world));
  violations.push(...checkDiscards(world, deadLetters(world)));
  violations.push(...world.haltedWhole.map((message) => ({ kind: 'invocation-failed-for-a-halt', message })));
  violations.push(...world.apiViolations.map((message) => ({ kind: 'api-answer', message })));
  violations.push(...versionViolations(world, quiescent));
  if (quiescent) {
    violations.push(...censusViolations(world));
    const decided = await decideInOrder(orderedCommands(world, committedAtEnd), deployments.newer);
    for (const m of compareWithDecisions(decided, resultsByCommand(world), world.restored))
      violations.push({
        kind: 'outcome-mismatch',
        message: `${m.commandId}: decided ${JSON.stringify(m.expected)}, results ${JSON.stringify(m.actual.map((r) => (r.status === 'accepted' ? `accepted v${r.version}` : `${r.status} ${r.reason.code}`)))}`,
      });
  }
  return violations;
};
