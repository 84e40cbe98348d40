/**
 * Reads what the invariant checker looks at: the events and results topics up to their end
 * offsets (through the framework's own TopicLog reader), the heads of the aggregates table
 * and the rows of one projection in the read-models table. A table that does not exist is
 * left out, and the checker says it did not check it.
 */
import { aggregateKey } from '../../functions/core/aggregate.ts';
import type { Operator } from '../../functions/compose/operator.ts';
import type { History, SummaryRow, TopicRecord } from './invariants.ts';

/** Where the history is. */
export interface HistorySources {
  /** Opens a topic as a log (composeOperator's `log`). */
  readonly log: Operator['log'];
  /** The events topic, or its generations oldest first (read in that order). */
  readonly eventsTopic: string | readonly string[];
  readonly resultsTopic: string;
  readonly heads?: Pick<Operator['heads'], 'scanAll'>;
  readonly readModels?: Pick<Operator['readModels'], 'query'>;
  /** The projection whose rows are read from `readModels`. @default none: no rows read */
  readonly readModel?: string;
  /** Where parked aggregates are kept (policy `park`). @default none: parked commands not checked */
  readonly park?: Pick<Operator['park'], 'list'>;
  /** Where the event side's parked aggregates are kept (the read-models table). @default none: read-model rows of parked aggregates checked as live ones */
  readonly eventPark?: Pick<Operator['eventPark'], 'list'>;
}

/** Every record of `topic` from its start to the end offsets of the moment; and whether retention has deleted any. */
export const readTopicRecords = async (open: Operator['log'], topic: string): Promise<{ records: TopicRecord[]; complete: boolean }> => {
  const log = open(topic);
  try {
    const { start, end } = await log.offsets();
    const records: TopicRecord[] = [];
    await log.read(start, end, (chunk) => {
      for (const r of chunk)
        records.push({
          topic,
          partition: r.partition,
          offset: r.offset,
          timestamp: r.timestamp,
          key: r.key?.toString('utf8') ?? null,
          value: r.value?.toString('utf8') ?? null,
        });
      return Promise.resolve('continue' as const);
    });
    records.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
    return { records, complete: Object.values(start).every((o) => o === 0) };
  } finally {
    await log.close();
  }
};

const missingTable = (error: unknown): boolean => error instanceof Error && error.name === 'ResourceNotFoundException';

/** Reads the topics first, then the tables (a head committed meanwhile is ahead of the log, which the checker allows unless quiescent). */
export const readHistory = async (sources: HistorySources): Promise<History> => {
  const eventsTopics = typeof sources.eventsTopic === 'string' ? [sources.eventsTopic] : sources.eventsTopic;
  const [generations, results] = await Promise.all([
    Promise.all(eventsTopics.map((topic) => readTopicRecords(sources.log, topic))),
    readTopicRecords(sources.log, sources.resultsTopic),
  ]);
  const events = { records: generations.flatMap((g) => g.records), complete: generations.every((g) => g.complete) };
  const absentIfMissing = (error: unknown): undefined => {
    if (missingTable(error)) return undefined;
    throw error;
  };
  const heads = sources.heads === undefined ? undefined : await sources.heads.scanAll().then((s) => s.heads, absentIfMissing);
  const summaries: SummaryRow[] | undefined =
    sources.readModels === undefined || sources.readModel === undefined
      ? undefined
      : await sources.readModels
          .query(sources.readModel)
          .then((rows) => rows.map(({ key, item }) => ({ rowId: key.sk, data: item.data, versions: item.versions })), absentIfMissing);
  const parked =
    sources.park === undefined
      ? undefined
      : await sources.park.list().then((list) => new Set(list.map((p) => aggregateKey(p.aggregateType, p.aggregateId))), absentIfMissing);
  const eventParked =
    sources.eventPark === undefined
      ? undefined
      : await sources.eventPark
          .list()
          .then(
            (list) =>
              new Map(
                list
                  .filter((p) => p.side === 'event')
                  .map((p) => [
                    aggregateKey(p.aggregateType, p.aggregateId),
                    { firstVersion: p.firstVersion, releasing: p.status === 'releasing' },
                  ]),
              ),
            absentIfMissing,
          );
  return {
    ...(parked === undefined ? {} : { parked }),
    ...(eventParked === undefined ? {} : { eventParked }),
    events: events.records,
    results: results.records,
    resultsComplete: results.complete,
    ...(heads === undefined ? {} : { heads }),
    ...(summaries === undefined ? {} : { summaries }),
  };
};
