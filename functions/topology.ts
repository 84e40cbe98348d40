/**
 * The one declaration of the system's topology: topics, tables and which function each
 * topic triggers. The CDK stack (infra/) and the local runtime (local/) both read it, so
 * the deployed and the local system cannot drift apart. Names here are defaults; the
 * environment may override them (see config.ts).
 */
import type { Generation } from './core/generations.ts';
import { generationName } from './core/generations.ts';

/**
 * How long Kafka keeps a topic's records. `forever` never deletes: retention.ms = -1 and
 * retention.bytes = -1 (a size limit deletes too; MSK Serverless limits a partition to
 * 250 GiB unless told otherwise).
 */
export type Retention = { readonly days: number } | 'forever';

/** A Kafka topic the system owns. */
export interface TopicSpec {
  /** Default topic name. */
  readonly name: string;
  /** Partition count: the unit of ordering and of parallelism. */
  readonly partitions: number;
  /**
   * Records are keyed by aggregate id and their order per key matters: the partition count
   * of a topic never changes (a new count moves keys to other partitions); it grows by a new
   * generation (`generations`). Other topics may grow in place.
   */
  readonly keyed: boolean;
  readonly retention: Retention;
  /** Largest record batch the topic accepts (`max.message.bytes`); the broker's default when absent. */
  readonly maxMessageBytes?: number;
  /** What the topic carries, for humans and for documentation. */
  readonly description: string;
}

/** A DynamoDB table the system owns, with a string partition key. */
export interface TableSpec {
  /** Default table name. */
  readonly name: string;
  /** Name of the partition key attribute (type S). */
  readonly partitionKey: string;
  /** Name of the sort key attribute (type S), when the table has one. */
  readonly sortKey?: string;
  /** Attribute holding an item's expiry (epoch seconds), for DynamoDB's TTL. */
  readonly timeToLiveAttribute?: string;
  /** Stateful tables hold what cannot be thrown away lightly (deletion protection on AWS). */
  readonly description: string;
}

/** How a topic triggers a function: the settings of an MSK event source mapping. */
export interface TriggerSpec {
  /** Key into `topics`. */
  readonly topic: TopicKey;
  /** Most records per invocation (1–10,000). */
  readonly batchSize: number;
  /** How long the trigger gathers records before invoking (0–300 s). */
  readonly maxBatchingWindowSeconds: number;
  /** Kafka consumer group id; fixed once the mapping exists. */
  readonly consumerGroupId: string;
}

/** An HTTP front door of a function: an API Gateway HTTP API, IAM authorization on every route. */
export interface HttpSpec {
  /** Steady requests per second the API admits (stage throttling); more get 429. */
  readonly rateLimit: number;
  /** Requests admitted at once above the steady rate. */
  readonly burstLimit: number;
}

/** A Lambda function of the system. */
export interface FunctionSpec {
  /** Source file of the handler, relative to the project root. */
  readonly entry: string;
  /** Kafka trigger, absent for functions invoked directly. */
  readonly trigger?: TriggerSpec;
  /** HTTP front door, for functions that serve requests (locally: a loopback server). */
  readonly http?: HttpSpec;
  /** Lambda timeout in seconds (a Kafka trigger allows at most 14 minutes). */
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  /** Most instances that may run at once (Lambda's reserved concurrency). @default unreserved */
  readonly reservedConcurrency?: number;
  /**
   * Key of another function whose trigger this one may disable and enable, and nothing more.
   * The snapshot rebuild uses it to hold command processing until it has caught up.
   */
  readonly controlsTriggerOf?: string;
  /** Topics the function's own code produces to (default: every topic but its trigger's). */
  readonly writes?: readonly TopicKey[];
  /**
   * A keyed topic whose generations after the first the function also produces to: the command
   * side forwards there a command that reached a sealed generation (command/generation-gate.ts).
   */
  readonly forwardsTo?: TopicKey;
  /** Topics the function's own code consumes (default: none when triggered, every topic when invoked directly). */
  readonly reads?: readonly TopicKey[];
  /** Tables the function reads and writes; it gets no access to the others. */
  readonly tables: readonly TableKey[];
  /** Tables the function only reads (consistent single and batched reads). @default none */
  readonly readsTables?: readonly TableKey[];
  /**
   * `items`: reads single items and batches of keys, writes single items (a handler's hot path).
   * `batches`: also writes items in batches. `maintenance`: also queries, scans and deletes
   * (rebuilds wipe and re-read whole tables).
   * @default 'items'
   */
  readonly tableAccess?: 'items' | 'batches' | 'maintenance';
  /**
   * Key of a triggered function whose trigger's committed offsets this one reads: the
   * read-models rebuild replays the events topic up to where that trigger has handled it.
   */
  readonly readsOffsetsOf?: string;
}

export const topics = {
  commands: {
    name: 'commands',
    partitions: 3,
    keyed: true,
    retention: { days: 7 },
    description: 'Commands to aggregates, key = aggregateId',
  },
  events: {
    name: 'events',
    partitions: 3,
    keyed: true,
    retention: 'forever',
    // The largest event is smaller than the largest head (350 KB, its outbox holds it); the
    // publisher sends at most 768 KiB per request, and a larger single record goes alone.
    maxMessageBytes: 1024 * 1024,
    description: 'Committed events, key = aggregateId; the log of record',
  },
  results: {
    name: 'results',
    partitions: 3,
    // Keyed for locality only: a client reads its result by commandId, whatever the partition.
    keyed: false,
    retention: { days: 1 },
    // Results are small: rejection messages are bounded (MAX_REASON_CHARS).
    maxMessageBytes: 1024 * 1024,
    description: 'Outcome of every command, key = aggregateId',
  },
  deadLetter: {
    name: 'dead-letter',
    partitions: 1,
    keyed: false,
    retention: { days: 14 },
    // A dead letter carries the original record as base64 (4/3 of its size) plus the reason:
    // room for any record the broker's default 1 MiB limit let onto a source topic.
    maxMessageBytes: 4 * 1024 * 1024,
    description: 'Records that could not be handled, with their original bytes and the reason',
  },
} as const satisfies Record<string, TopicSpec>;

/** Key of a topic in `topics`. */
export type TopicKey = keyof typeof topics;

export const tables = {
  aggregates: {
    name: 'aggregates',
    partitionKey: 'pk',
    // Archived commandIds and kept outcomes expire (head-item.ts); heads and checkpoints have no expiry.
    timeToLiveAttribute: 'expiresAt',
    description: 'Aggregate heads (state, version, source offsets, recent commands, outbox) and publish watermarks',
  },
  readModels: {
    name: 'read-models',
    partitionKey: 'pk',
    sortKey: 'sk',
    description: 'Projection rows, each with the version it has applied per aggregate',
  },
} as const satisfies Record<string, TableSpec>;

/** Key of a table in `tables`. */
export type TableKey = keyof typeof tables;

export const functions = {
  commandHandler: {
    entry: 'functions/handlers/commands.ts',
    // No batching window: a client waits for its result. Under load batches fill by themselves,
    // and a large batch pays: its cost is one write per aggregate it holds, however many
    // commands each has (the payload stays far under Lambda's 6 MB at this size).
    trigger: { topic: 'commands', batchSize: 5000, maxBatchingWindowSeconds: 0, consumerGroupId: 'kafka-aggregates-command-handler' },
    timeoutSeconds: 60,
    memoryMb: 512,
    // It reads its own topic back, only when a batch does not line up with its partition's checkpoint.
    reads: ['commands'],
    // A command that reaches a sealed generation of its topic goes on to the newest.
    forwardsTo: 'commands',
    tables: ['aggregates'],
    // It archives the accepted commands that leave a head's recent window and keeps the
    // outcomes no head remembers (for the command API), 25 per request.
    tableAccess: 'batches',
  },
  eventHandler: {
    entry: 'functions/handlers/events.ts',
    // As for commands: one write per projection row and reaction checkpoint a batch touches.
    // Lambda cuts a batch at its 6 MB payload limit, whatever the size says.
    trigger: { topic: 'events', batchSize: 5000, maxBatchingWindowSeconds: 1, consumerGroupId: 'kafka-aggregates-event-handler' },
    timeoutSeconds: 60,
    memoryMb: 512,
    // Reactions send commands; malformed events go to the dead-letter topic.
    writes: ['commands', 'deadLetter'],
    // It reads its own topic back, only for the census another function held unwritten (event/census-writes.ts).
    reads: ['events'],
    tables: ['readModels'],
    // Under policy `park` it writes a parked aggregate's first events 25 per request.
    tableAccess: 'batches',
  },
  snapshotRebuild: {
    entry: 'functions/handlers/rebuild.ts',
    // Invoked directly; resumable, so the time limit bounds one run, not the rebuild.
    timeoutSeconds: 900,
    memoryMb: 1769,
    // No reserved concurrency by default (a reservation fails on accounts whose quota is still 10):
    // the rebuild lock in the control item keeps a second aggregates rebuild out, and the
    // read-model rebuilds' lock (rebuild/read-model-lock.ts) a second read-model rebuild.
    controlsTriggerOf: 'commandHandler',
    readsOffsetsOf: 'eventHandler',
    reads: ['events'],
    writes: ['events'],
    tables: ['aggregates', 'readModels'],
    tableAccess: 'maintenance',
  },
  commandApi: {
    entry: 'functions/handlers/command-api.ts',
    // POST /commands waits for the outcome up to 25 s (COMMAND_API_MAX_WAIT_MS); API Gateway gives up at 30 s.
    http: { rateLimit: 100, burstLimit: 200 },
    timeoutSeconds: 29,
    memoryMb: 512,
    writes: ['commands'],
    reads: [],
    // Its own items in the aggregates table: what each commandId it sent carried (a conditional put).
    tables: ['aggregates'],
    readsTables: ['readModels'],
  },
} as const satisfies Record<string, FunctionSpec>;

/** Retention in milliseconds as Kafka's `retention.ms` wants it. */
export const retentionMs = (retention: Retention): number => (retention === 'forever' ? -1 : retention.days * 24 * 60 * 60 * 1000);

/**
 * The topic settings the topology declares, as Kafka config entries. `retention.bytes` is
 * declared only for `forever` (-1); a time-bound topic keeps the cluster's size limit.
 */
export const topicConfig = (spec: Pick<TopicSpec, 'retention' | 'maxMessageBytes'>): Record<string, string> => ({
  'retention.ms': String(retentionMs(spec.retention)),
  ...(spec.retention === 'forever' ? { 'retention.bytes': '-1' } : {}),
  ...(spec.maxMessageBytes === undefined ? {} : { 'max.message.bytes': String(spec.maxMessageBytes) }),
});

/**
 * A deployment's name for a topology topic or consumer group: `<prefix>.<name>`, so that
 * deployments sharing a cluster neither share topics nor join each other's groups. Without a
 * prefix (the local system), the topology's name as it is.
 */
export const scopedName = (prefix: string | undefined, name: string): string => (prefix === undefined ? name : `${prefix}.${name}`);

/** The generations of keyed topic `base` for its partition counts, oldest first: how a keyed topic grows (core/generations.ts). */
export const generations = (base: string, counts: readonly number[]): Generation[] =>
  counts.map((partitions, index) => ({ name: generationName(base, index), index, partitions }));
