/** `kafka-aggregates tail`: prints a topic's records as they come, until Ctrl-C. */
import { createKafka } from '../../functions/adapters/kafka.ts';
import { topicName } from '../../functions/config.ts';
import type { TopicKey } from '../../functions/topology.ts';
import { watchTopics, type WatchedRecord } from '../runtime/watch.ts';
import { explain, parse, requireBroker, usageError, type CliCommand } from './common.ts';

/** The topics `tail` knows, by the name the user types. */
const TOPICS: Readonly<Record<string, TopicKey>> = { events: 'events', results: 'results', commands: 'commands', 'dead-letter': 'deadLetter' };

const help = `Usage: kafka-aggregates tail <events|results|commands|dead-letter> [options]

Prints each record of the topic as it is written, one line per record:
  <partition>@<offset> <time> <key> <value>
until Ctrl-C. Topic names follow COMMANDS_TOPIC, EVENTS_TOPIC, RESULTS_TOPIC, DEAD_LETTER_TOPIC.

Options:
  --from-beginning   start at the first record instead of the end
  -h, --help         show this help

Example:
  kafka-aggregates tail events --from-beginning`;

const text = (bytes: Buffer | null): string => (bytes === null ? '(null)' : bytes.toString('utf8'));

/** One line for a record. */
export const formatRecord = (r: WatchedRecord): string => {
  const headers = Object.entries(r.headers ?? {})
    .map(([name, value]) => `${name}=${String(value)}`)
    .join(',');
  return `${r.partition}@${r.offset} ${new Date(r.timestamp).toISOString()} ${text(r.key)} ${text(r.value)}${headers === '' ? '' : ` [${headers}]`}`;
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
    const topic = topicName(key);
    const watcher = await watchTopics(createKafka('kafka-aggregates-cli'), [topic], (r) => console.log(formatRecord(r)), {
      fromBeginning: values['from-beginning'] ?? false,
      groupPrefix: 'kafka-aggregates-tail',
    }).catch((error: unknown) => {
      throw explain(error);
    });
    console.error(`tailing ${topic}${values['from-beginning'] === true ? ' from the beginning' : ''}; Ctrl-C to stop`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    await watcher.stop();
    return 0;
  },
};
