/**
 * Runtime configuration from the environment, with the local stack's defaults. The same
 * code runs on AWS, on the local stack, and against LocalStack or any other endpoint.
 */
import type { Generation } from './core/generations.ts';
import { functions, generations, retentionMs, tables, topics, type TableKey, type TopicKey } from './topology.ts';

const env = (name: string): string | undefined => {
  const value = process.env[name]?.trim();
  return value === '' ? undefined : value;
};

/** Environment variable that overrides each topic's name. */
export const topicEnv: Record<TopicKey, string> = {
  commands: 'COMMANDS_TOPIC',
  events: 'EVENTS_TOPIC',
  results: 'RESULTS_TOPIC',
  deadLetter: 'DEAD_LETTER_TOPIC',
};

/** Environment variable that overrides each table's name. */
export const tableEnv: Record<TableKey, string> = {
  aggregates: 'AGGREGATES_TABLE',
  readModels: 'READ_MODELS_TABLE',
};

/** The topic's name in this environment. */
export const topicName = (key: TopicKey): string => env(topicEnv[key]) ?? topics[key].name;

/** The table's name in this environment. */
export const tableName = (key: TableKey): string => env(tableEnv[key]) ?? tables[key].name;

/**
 * The partition count of each generation of the keyed topics, oldest first
 * (`PARTITION_GENERATIONS`, e.g. `3,6`: set by the stack, and by the local runtime when it sees
 * a new generation); one generation of the topology's count by default.
 */
export const partitionGenerations = (): number[] => {
  const value = env('PARTITION_GENERATIONS');
  if (value === undefined) return [topics.commands.partitions];
  const counts = value.split(',').map((c) => Number(c.trim()));
  if (counts.some((c, i) => !Number.isSafeInteger(c) || c < 1 || (i > 0 && c <= (counts[i - 1] ?? 0))))
    throw new Error(`PARTITION_GENERATIONS must list growing partition counts (e.g. 3,6), got ${JSON.stringify(value)}`);
  return counts;
};

/** Every generation of a keyed topic in this environment, oldest first; a topic that is not keyed has one. */
export const topicGenerations = (key: TopicKey): Generation[] =>
  topics[key].keyed
    ? generations(topicName(key), partitionGenerations())
    : [{ name: topicName(key), index: 0, partitions: topics[key].partitions }];

/** The topic producers write to: the newest generation of a keyed topic. */
export const currentTopicName = (key: TopicKey): string => topicGenerations(key).at(-1)?.name ?? topicName(key);

/** The names of every topic and table in this environment. */
export interface Names {
  readonly topics: Readonly<Record<TopicKey, string>>;
  readonly tables: Readonly<Record<TableKey, string>>;
}

/** Every topic's and table's name in this environment. */
export const names = (): Names => ({
  topics: Object.fromEntries((Object.keys(topics) as TopicKey[]).map((k) => [k, topicName(k)])) as Record<TopicKey, string>,
  tables: Object.fromEntries((Object.keys(tables) as TableKey[]).map((k) => [k, tableName(k)])) as Record<TableKey, string>,
});

/** The consumer groups a function needs to know beside its own trigger's. */
export interface Groups {
  /** The function's own group (`KAFKA_CONSUMER_GROUP`, set by the stack), for its own reads of a topic. */
  readonly own: string | undefined;
  /** The commands trigger's group, whose committed offsets the rebuild's checkpoints start from. */
  readonly commandsTrigger: string;
  /** The events trigger's group, which the event side checks its table against and the read-models rebuild replays up to. */
  readonly eventsTrigger: string;
}

/** The consumer groups in this environment (the stack sets them; tests and a second local system may). */
export const groups = (): Groups => ({
  own: env('KAFKA_CONSUMER_GROUP'),
  commandsTrigger: env('COMMANDS_CONSUMER_GROUP') ?? functions.commandHandler.trigger.consumerGroupId,
  eventsTrigger: env('TRIGGER_CONSUMER_GROUP') ?? env('READ_MODELS_CONSUMER_GROUP') ?? functions.eventHandler.trigger.consumerGroupId,
});

/** How long the command side recognises an accepted commandId, and keeps outcomes no head remembers: the topics' retentions. */
export const retentions = () => ({
  dedupeWindowMs: retentionMs(topics.commands.retention),
  keptResultsMs: retentionMs(topics.results.retention),
});

/** Default DynamoDB emulator endpoint of the local stack. */
export const LOCAL_DYNAMODB_ENDPOINT = 'http://127.0.0.1:8000';
/** Default broker of the local stack. */
export const LOCAL_KAFKA_BROKERS = '127.0.0.1:9092';

/** Kafka bootstrap brokers (`KAFKA_BROKERS`, comma separated). */
export const kafkaBrokers = (): string[] =>
  (env('KAFKA_BROKERS') ?? LOCAL_KAFKA_BROKERS)
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b !== '');

/** True when running inside AWS Lambda. */
export const onAws = (): boolean => env('AWS_LAMBDA_FUNCTION_NAME') !== undefined;

/**
 * The endpoint the environment gives a service, read as the AWS SDK reads it: the
 * service's own variable (`AWS_ENDPOINT_URL_DYNAMODB`) first, then the general
 * `AWS_ENDPOINT_URL` (which LocalStack also sets inside its Lambda functions).
 */
export const configuredEndpoint = (service: 'DYNAMODB' | 'LAMBDA'): string | undefined =>
  env(`AWS_ENDPOINT_URL_${service}`) ?? env('AWS_ENDPOINT_URL');

/**
 * DynamoDB endpoint: the configured one; otherwise the local emulator outside Lambda, and the
 * SDK's own resolution on AWS.
 */
export const dynamoEndpoint = (): string | undefined => configuredEndpoint('DYNAMODB') ?? (onAws() ? undefined : LOCAL_DYNAMODB_ENDPOINT);

/** AWS region (`AWS_REGION`), `us-east-1` for local runs. */
export const awsRegion = (): string => env('AWS_REGION') ?? env('AWS_DEFAULT_REGION') ?? 'us-east-1';

/**
 * Prefix of the throwaway consumer groups a function reads a range of a topic with (`<prefix>-reader-…`):
 * its own group on AWS (`KAFKA_CONSUMER_GROUP`, which its IAM policy names), a generic one locally.
 */
export const readerGroupPrefix = (): string => env('KAFKA_CONSUMER_GROUP') ?? 'kafka-aggregates';

/** The rebuild's hold on the triggers: the commands trigger it may disable, and how long it waits for a batch in flight. */
export const rebuildHold = () => ({
  /** UUIDs of the commands triggers' event source mappings, one per generation, comma separated (`CONTROLLED_TRIGGER_UUID`), set by the stack. */
  commandsTriggerUuid: env('CONTROLLED_TRIGGER_UUID'),
  commandDrainMs: wholeNumber('COMMAND_DRAIN_SECONDS', 0) * 1000,
  readModelsDrainMs: wholeNumber('READ_MODELS_DRAIN_SECONDS', 0) * 1000,
});

/**
 * How long the command handler waits before it fails a batch whose table is behind its log
 * (`TABLE_BEHIND_BACKOFF_SECONDS`): the trigger retries a failed batch at once, and only a
 * rebuild cures it. 20 s on AWS; none locally, where the system rebuilds by itself on the error.
 */
export const tableBehindBackoffMs = (): number => wholeNumber('TABLE_BEHIND_BACKOFF_SECONDS', onAws() ? 20 : 0) * 1000;

/** Powertools names the stack sets (`POWERTOOLS_SERVICE_NAME`, `POWERTOOLS_METRICS_NAMESPACE`); undefined when not set. */
export const powertoolsNames = () => ({ serviceName: env('POWERTOOLS_SERVICE_NAME'), namespace: env('POWERTOOLS_METRICS_NAMESPACE') });

/** Environment variables through which the AWS SDK finds credentials on its own. */
const CREDENTIAL_ENV = [
  'AWS_ACCESS_KEY_ID',
  'AWS_PROFILE',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
];

/** True when the environment holds credentials the AWS SDK finds by itself. */
export const credentialsInEnv = (): boolean => CREDENTIAL_ENV.some((name) => env(name) !== undefined);

/** The low-balance reaction's threshold (`LOW_BALANCE_THRESHOLD_CENTS`) when it is a positive whole number. */
export const lowBalanceThresholdCents = (): number | undefined => {
  const cents = Number(env('LOW_BALANCE_THRESHOLD_CENTS') ?? '');
  return Number.isSafeInteger(cents) && cents > 0 ? cents : undefined;
};

/** Kafka authentication: `iam` for MSK IAM (SASL/OAUTHBEARER over TLS), `none` for plaintext. */
export const kafkaAuth = (): 'iam' | 'none' => (env('KAFKA_AUTH') === 'iam' ? 'iam' : 'none');

const wholeNumber = (name: string, fallback: number): number => {
  const value = env(name);
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a whole number, got ${JSON.stringify(value)}`);
  return n;
};

/**
 * How the command API waits for outcomes: the first read near the typical command-to-outcome
 * time (earlier reads find nothing and cost a request each; docs/BENCHMARKS.md measures it
 * locally), then reads at doubling gaps. On AWS set `COMMAND_API_FIRST_READ_MS` near the p50
 * of the function's `outcomeAfterMs` metric.
 */
export const commandApiWait = () => ({
  /** How long POST /commands waits when the caller does not say (`Prefer: wait=<s>`). */
  waitMs: wholeNumber('COMMAND_API_WAIT_MS', 10_000),
  /** The longest wait a caller may ask for; below the function's timeout and API Gateway's 30 s. */
  maxWaitMs: wholeNumber('COMMAND_API_MAX_WAIT_MS', 25_000),
  wait: {
    firstReadAfterMs: wholeNumber('COMMAND_API_FIRST_READ_MS', 100),
    gapMs: wholeNumber('COMMAND_API_READ_GAP_MS', 50),
    factor: 2,
    maxGapMs: 1_000,
  },
});

/** Loopback port of the local command API (`npm start`); 0 picks a free one. */
export const commandApiPort = (): number => {
  const port = wholeNumber('COMMAND_API_PORT', 3000);
  if (port > 65_535) throw new Error(`COMMAND_API_PORT must be a TCP port (0–65535), got ${port}`);
  return port;
};

/**
 * Browser origins the local command API answers (`COMMAND_API_ORIGINS`, comma separated, e.g.
 * `http://localhost:5173`); a request with any other `Origin` is refused, so a web page cannot
 * reach the unauthenticated local server (DNS rebinding included).
 */
export const commandApiOrigins = (): readonly string[] =>
  (process.env.COMMAND_API_ORIGINS ?? '')
    .split(',')
    .map((o) => o.trim().replace(/\/$/, ''))
    .filter((o) => o !== '');

/**
 * What the command side does with a command whose handling fails for a cause bound to it
 * (its aggregate's decide or evolve throwing, an event it returns that the log or a store
 * refuses): `block` (the default: it is rejected as `DecideFailed` and dead-lettered, as it
 * always was) or `park` (after `PARK_ATTEMPTS` attempts, 3 by default, its aggregate is parked
 * until an operator releases or discards it; docs/OPERATIONS.md). `COMMAND_FAILURE_POLICY`, set by the stack.
 */
export const commandFailurePolicy = (): { readonly policy: 'block' | 'park'; readonly attempts: number } =>
  failurePolicy('COMMAND_FAILURE_POLICY');

/**
 * What the event side does with an event that halts its partition for a cause bound to it (a
 * projection or reaction throwing on it, an event this code cannot read): `block` (the
 * default: the partition halts there until fixed code is deployed or an operator skips it) or
 * `park` (after `PARK_ATTEMPTS` halts its aggregate's events are set aside, in order, until an
 * operator releases or discards them; docs/OPERATIONS.md). `EVENT_FAILURE_POLICY`, set by the stack.
 */
export const eventFailurePolicy = (): { readonly policy: 'block' | 'park'; readonly attempts: number } =>
  failurePolicy('EVENT_FAILURE_POLICY');

const failurePolicy = (name: string): { readonly policy: 'block' | 'park'; readonly attempts: number } => {
  const policy = env(name) ?? 'block';
  if (policy !== 'block' && policy !== 'park') throw new Error(`${name} must be block or park, got ${JSON.stringify(policy)}`);
  const attempts = wholeNumber('PARK_ATTEMPTS', 3);
  if (attempts < 1) throw new Error('PARK_ATTEMPTS must be at least 1');
  return { policy, attempts };
};
