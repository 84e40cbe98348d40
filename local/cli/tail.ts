/** `kafka-aggregates tail`: prints a topic's records as they come, until Ctrl-C. */
import { createKafka } from '../../functions/compose/operator.ts';
import type { AnyAggregate } from '../../functions/core/aggregate.ts';
import { readDeadLetter } from '../../functions/core/dead-letter.ts';
import { readEvent } from '../../functions/core/event-reader.ts';
import { registry } from '../../functions/core/registry.ts';
import { currentRevision } from '../../functions/core/upcast.ts';
import { topicGenerations } from '../../functions/config.ts';
import { splitGeneration } from '../../functions/core/generations.ts';
import { adoptGenerations } from '../generations.ts';
import { aggregates } from '../../functions/domain/index.ts';
import type { TopicKey } from '../../functions/topology.ts';
import { watchTopics, type WatchedRecord } from '../client/watch.ts';
import { explain, parse, requireBroker, usageError, type CliCommand } from './common.ts';

/** The topics `tail` knows, by the name the user types. */
const TOPICS: Readonly<Record<string, TopicKey>> = {
  events: 'events',
  results: 'results',
  commands: 'commands',
  'dead-letter': 'deadLetter',
};

const help = `Usage: kafka-aggregates tail <events|results|commands|dead-letter> [options]

Prints each record of the topic as it is written, one line per record:
  <partition>@<offset> <time> <key> <value>
until Ctrl-C. Topic names follow COMMANDS_TOPIC, EVENTS_TOPIC, RESULTS_TOPIC, DEAD_LETTER_TOPIC.

Events are read as the handlers read them (the envelope, the key, the upcasters, the current
schema): an event stored at an older revision gets a second line with what it is read as,
and one the code cannot read a line saying why:
  <partition>@<offset> <time> <key> <value>
    read as <type> revision <n> <data>      (or: unreadable: <code>: <message>)

Dead letters are decoded, whoever wrote them (this project's handlers, or a Lambda on-failure
destination, whose record holds the failed batch):
  <partition>@<offset> <time> <code> <source topic>-<partition>@<offset> key=<key> <message>
    value: <the original value, as text>

Options:
  --from-beginning   start at the first record instead of the end
  -h, --help         show this help

Example:
  kafka-aggregates tail events --from-beginning`;

const text = (bytes: Buffer | null): string => (bytes === null ? '(null)' : bytes.toString('utf8'));

/** Where a record is: `partition@offset`, with its topic when it is a later generation's (core/generations.ts). */
const place = (r: Pick<WatchedRecord, 'topic' | 'partition' | 'offset'>): string =>
  `${splitGeneration(r.topic).index === 0 ? '' : `${r.topic}-`}${r.partition}@${r.offset}`;

/** One line for a record. */
export const formatRecord = (r: WatchedRecord): string => {
  const headers = Object.entries(r.headers ?? {})
    .map(([name, value]) => `${name}=${String(value)}`)
    .join(',');
  return `${place(r)} ${new Date(r.timestamp).toISOString()} ${text(r.key)} ${text(r.value)}${headers === '' ? '' : ` [${headers}]`}`;
};

/** The lines of an events record: as stored, then what the current code reads it as when upcast, or why it cannot. */
export const formatEvent = (r: WatchedRecord, known: ReadonlyMap<string, AnyAggregate>): string => {
  const line = formatRecord(r);
  const outcome = readEvent({ key: r.key, value: r.value, position: r }, known);
  if ('fault' in outcome) return `${line}\n  unreadable: ${outcome.fault.code}: ${outcome.fault.message}`;
  if (!outcome.event.upcast) return line;
  const { event } = outcome.event;
  return `${line}\n  read as ${event.type} revision ${currentRevision(known.get(event.aggregateType) as AnyAggregate, event.type)} ${JSON.stringify(event.data)}`;
};

const decoded = (base64: string | null): string => (base64 === null ? '(null)' : Buffer.from(base64, 'base64').toString('utf8'));

/** The lines of a dead-letter record: decoded in either format, or as any record when it is neither. */
export const formatDeadLetter = (r: WatchedRecord): string => {
  const views = r.value === null ? undefined : readDeadLetter(r.value.toString('utf8'));
  if (views === undefined || views.length === 0) return formatRecord(r);
  const at = `${place(r)} ${new Date(r.timestamp).toISOString()}`;
  return views
    .map(
      (v) =>
        `${at} ${v.code} ${v.source.topic}-${v.source.partition}@${v.source.offset} key=${decoded(v.key)} ${v.message}\n  value: ${decoded(v.value)}`,
    )
    .join('\n');
};

/** The `tail` command. */
export const tail: CliCommand = {
  name: 'tail',
  summary: 'print the records of a topic as they come',
  help,
  async run(args) {
    const { values, positionals } = parse('tail', args, { 'from-beginning': { type: 'boolean' } });
    if (values.help === true) {
      console.log(help);
      return 0;
    }
    const [which, ...extra] = positionals;
    const key = which === undefined ? undefined : TOPICS[which];
    if (key === undefined || extra.length > 0) throw usageError('tail', `tail needs one of ${Object.keys(TOPICS).join(', ')}`);
    await requireBroker();
    // Every generation of a keyed topic (after `kafka-aggregates grow`), as the broker has them now.
    const admin = createKafka('kafka-aggregates-cli').admin();
    await admin.connect();
    await adoptGenerations(admin).finally(() => admin.disconnect());
    const generations = topicGenerations(key).map((g) => g.name);
    const known = registry(aggregates);
    const format = key === 'deadLetter' ? formatDeadLetter : key === 'events' ? (r: WatchedRecord) => formatEvent(r, known) : formatRecord;
    let crashed: (error: Error) => void = () => undefined;
    const watcher = await watchTopics(createKafka('kafka-aggregates-cli'), generations, (r) => console.log(format(r)), {
      fromBeginning: values['from-beginning'] ?? false,
      groupPrefix: 'kafka-aggregates-tail',
      onCrash: (error) => crashed(error),
    }).catch((error: unknown) => {
      throw explain(error);
    });
    // `on`, not `once`: Ctrl-C may arrive twice, from the terminal and passed on by bin/kafka-aggregates.js.
    // A consumer that crashed (the broker went away) ends the tail with its error, said in one line.
    // Listening before the line that invites the signal: one sent at once must not meet Node's default (exit 143).
    const stopped = new Promise<void>((resolve, reject) => {
      process.on('SIGINT', resolve);
      process.on('SIGTERM', resolve);
      crashed = reject;
    });
    console.error(`tailing ${generations.join(', ')}${values['from-beginning'] === true ? ' from the beginning' : ''}; Ctrl-C to stop`);
    await stopped.finally(() => watcher.stop().catch(() => undefined));
    return 0;
  },
};
