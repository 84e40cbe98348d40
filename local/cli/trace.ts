/** `kafka-aggregates trace`: one command followed end to end (local/trace/chain.ts). */
import { composeOperator, type LogRecord } from '../../functions/compose/operator.ts';
import { topicGenerations } from '../../functions/config.ts';
import type { LogReader } from '../../functions/core/log.ts';
import { adoptGenerations } from '../generations.ts';
import { aggregateKey } from '../../functions/core/aggregate.ts';
import { readEvent } from '../../functions/core/event-reader.ts';
import { splitGeneration } from '../../functions/core/generations.ts';
import type { EventRecord, ResultRecord } from '../../functions/core/wire.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { eventRegistry } from '../../functions/event/registry.ts';
import { routeEvents } from '../../functions/event/route.ts';
import { projections } from '../../functions/projections/index.ts';
import { reactions } from '../../functions/reactions/index.ts';
import { formatTrace, traceCommand, type Place, type TracedCommand, type TracedItem } from '../trace/chain.ts';
import { explain, parse, requireBroker, usageError, type CliCommand } from './common.ts';

const help = `Usage: kafka-aggregates trace <commandId> [--json]

Follows one command end to end: the command record (its correlation and cause), its result,
its events with their offsets, the read-model rows and reaction checkpoints each event
reached (applied or not yet), and the commands those events caused (a reaction's command
names its event as causationId), each followed the same way. Each line shows its record's
span (its traceparent header), and the first command's line the trace id.

It reads the commands, events and results topics from their start (a whole read of each:
seconds locally, long on a large deployment) and the read models by key. Topic and table
names follow COMMANDS_TOPIC, EVENTS_TOPIC, RESULTS_TOPIC and READ_MODELS_TABLE; with
KAFKA_BROKERS and AWS credentials it traces a deployed stack as well.

Options:
  --json       print the chain as JSON
  -h, --help   show this help`;

/** Every record of a topic, from its start to its end now. */
const readAll = async (log: LogReader): Promise<LogRecord[]> => {
  const { start, end } = await log.offsets();
  const records: LogRecord[] = [];
  await log.read(start, end, (chunk) => {
    records.push(...chunk);
    return Promise.resolve('continue');
  });
  return records;
};

const json = (record: LogRecord): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(record.value?.toString('utf8') ?? 'null');
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
};

/** Where a record is, its topic named when it is a later generation's. */
const placeOf = (r: LogRecord): Place => ({
  ...(r.topic === undefined || splitGeneration(r.topic).index === 0 ? {} : { topic: r.topic }),
  partition: r.partition,
  offset: r.offset,
});

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/** A command record, with its cause from the field or, as reactions wrote it before, from metadata. */
const asCommand = (record: LogRecord): TracedCommand | undefined => {
  const v = json(record);
  const [commandId, aggregateType, aggregateId, type] = [v?.commandId, v?.aggregateType, v?.aggregateId, v?.type].map(text);
  if (commandId === undefined || aggregateType === undefined || aggregateId === undefined || type === undefined) return undefined;
  const metadata = (typeof v?.metadata === 'object' && v.metadata !== null ? v.metadata : {}) as Record<string, unknown>;
  const correlationId = text(v?.correlationId) ?? text(metadata.correlationId);
  const causationId = text(v?.causationId) ?? text(metadata.causationId);
  return {
    commandId,
    aggregateType,
    aggregateId,
    type,
    ...(correlationId === undefined ? {} : { correlationId }),
    ...(causationId === undefined ? {} : { causationId }),
    place: placeOf(record),
    ...(record.traceparent === undefined ? {} : { traceparent: record.traceparent }),
  };
};

/** `kafka-aggregates trace`. */
export const trace: CliCommand = {
  name: 'trace',
  summary: 'follow one command: its result, events, read-model rows and the commands they caused',
  help,
  run: async (args) => {
    const { values, positionals } = parse('trace', args, { json: { type: 'boolean' } });
    if (values.help === true) {
      console.log(help);
      return 0;
    }
    const [commandId, ...extra] = positionals;
    if (commandId === undefined || extra.length > 0) throw usageError('trace', 'give exactly one commandId');
    await requireBroker();
    const operator = composeOperator('kafka-aggregates-trace');
    const { names } = operator;
    // Every generation of the keyed topics (after `kafka-aggregates grow`), oldest first.
    const admin = operator.kafka.admin();
    await admin.connect();
    await adoptGenerations(admin).finally(() => admin.disconnect());
    const generationsOf = (key: 'commands' | 'events') => topicGenerations(key).map((g) => g.name);
    const logs = {
      commands: operator.generationLog(generationsOf('commands')),
      events: operator.generationLog(generationsOf('events')),
      results: operator.log(names.topics.results),
    };
    try {
      const [commandRecords, eventRecords, resultRecords] = await Promise.all([
        readAll(logs.commands),
        readAll(logs.events),
        readAll(logs.results),
      ]).catch((error: unknown) => {
        throw explain(error);
      });
      const known = new Map(aggregates.map((a) => [a.type, a]));
      const events = eventRecords.flatMap((r) => {
        const read = readEvent(
          { key: r.key, value: r.value, position: { topic: r.topic ?? names.topics.events, partition: r.partition, offset: r.offset } },
          known,
        );
        if (!('event' in read)) return [];
        const place = placeOf(r);
        return [
          { event: read.event.stored, place, ...(r.traceparent === undefined ? {} : { traceparent: r.traceparent }), read: read.event },
        ];
      });
      const registry = eventRegistry(aggregates, projections, reactions);
      const table = operator.readModels;
      // Which items each event reaches, and whether they have applied it: read once per item.
      const reached = new Map<string, { kind: 'projection' | 'reaction'; name: string; item: string; key: { pk: string; sk: string } }[]>();
      for (const e of events)
        reached.set(
          e.event.eventId,
          [...routeEvents([{ event: e.read.event, position: e.read.position }], registry).values()].map((route) => ({
            kind: route.folder.consumer.kind,
            name: route.folder.consumer.name,
            item: route.folder.key.sk,
            key: route.folder.key,
          })),
        );
      const items = new Map<string, Awaited<ReturnType<typeof table.get>>>();
      const itemsOf = (event: EventRecord, place: Place): TracedItem[] =>
        (reached.get(event.eventId) ?? []).map(({ kind, name, item, key }) => {
          const stored = items.get(`${key.pk}\n${key.sk}`);
          const tp = `${place.topic ?? names.topics.events}-${place.partition}`;
          const applied =
            (stored?.versions[aggregateKey(event.aggregateType, event.aggregateId)] ?? 0) >= event.version ||
            (stored?.offsets?.[tp] ?? -1) >= place.offset;
          return { kind, name, item, applied };
        });
      const log = {
        commands: commandRecords.flatMap((r) => asCommand(r) ?? []),
        results: resultRecords.flatMap((r) => {
          const result = json(r);
          return result?.commandId === undefined
            ? []
            : [{ ...(result as unknown as ResultRecord), ...(r.traceparent === undefined ? {} : { traceparent: r.traceparent }) }];
        }),
        events,
      };
      // Read the items of the chain's events (a first pass finds them) before the chain is built for good.
      const first = traceCommand(commandId, log, () => []);
      const chainEvents = (node: typeof first): string[] => [
        ...node.events.map((e) => e.event.eventId),
        ...node.caused.flatMap(chainEvents),
      ];
      const wanted = chainEvents(first).flatMap((id) => reached.get(id) ?? []);
      for (const { key } of wanted) if (!items.has(`${key.pk}\n${key.sk}`)) items.set(`${key.pk}\n${key.sk}`, await table.get(key));
      const chain = traceCommand(commandId, log, itemsOf);
      if (values.json === true) console.log(JSON.stringify(chain, null, 2));
      else console.log(formatTrace(chain, names.topics).join('\n'));
      return chain.command === undefined && chain.results.length === 0 ? 1 : 0;
    } finally {
      await Promise.all(Object.values(logs).map((l) => l.close()));
      operator.close();
    }
  },
};
