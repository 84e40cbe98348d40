/**
 * Lambda entry of the snapshot rebuild, invoked directly: `{"mode":"rebuild"}` (default)
 * rebuilds the aggregates table from the events topic, holding commands until it has caught
 * up; `{"mode":"verify"}` compares the table with the topic and writes nothing;
 * `{"projection":"account-summary"}` rebuilds that projection's rows instead;
 * `{"readModels":true}` rebuilds every projection and reaction checkpoint up to where the
 * event trigger stands, holding the event side meanwhile. A rebuild that nears the time limit
 * stops at a checkpoint and reports `incomplete`: invoke again.
 *
 * The response stays far below Lambda's 6 MB limit: every list in a report is cut to its
 * first items (at most REPORT_ITEMS, and REPORT_BYTES in all), with its full length beside
 * it; the items left out go to the log.
 */
import middy from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Context } from 'aws-lambda';
import { tableName, topicName } from './config.ts';
import { createLambdaClient } from './adapters/aws-clients.ts';
import { createLogger } from './adapters/powertools.ts';
import { createDocumentClient, createDynamoClient } from './adapters/dynamodb.ts';
import { EventLog } from './adapters/event-log.ts';
import { HeadsTable } from './adapters/heads-table.ts';
import { createKafka, createProducer } from './adapters/kafka.ts';
import { KafkaPublisher } from './adapters/publisher.ts';
import { EventSourceMappingGate, lockOnlyGate } from './adapters/trigger-gate.ts';
import { ReadModelsTable } from './adapters/read-models-table.ts';
import { triggerPositions } from './adapters/trigger-positions.ts';
import { aggregates } from './domain/index.ts';
import { functions, retentionMs, topics } from './topology.ts';
import { projections } from './projections/index.ts';
import { ConsumerOffsets } from './adapters/consumer-offsets.ts';
import { reactions } from './reactions/index.ts';
import { rebuildProjection, rebuildReadModels, type ProjectionRebuildReport, type ReadModelsRebuildReport } from './rebuild/rebuild-projection.ts';
import { rebuildAggregates, verifyAggregates, type CommandGate, type Progress, type RebuildReport, type VerifyReport } from './rebuild/rebuild-aggregates.ts';

/** What to do. */
export interface RebuildRequest {
  readonly mode?: 'rebuild' | 'verify';
  /** Rebuild this projection's rows rather than the aggregates table. */
  readonly projection?: string;
  /** Rebuild every projection and reaction checkpoint up to where the event trigger stands. */
  readonly readModels?: boolean;
}

/** Any report the function returns. */
export type AnyRebuildReport = RebuildReport | VerifyReport | ProjectionRebuildReport | ReadModelsRebuildReport;

/** The request names a projection the deployment does not have. */
export class UnknownProjectionError extends Error {
  override readonly name = 'UnknownProjectionError';
  constructor(readonly projection: string) {
    super(`unknown projection ${JSON.stringify(projection)}; known: ${projections.map((p) => p.name).join(', ')}`);
  }
}

const logger = createLogger('snapshot-rebuild');
const kafka = createKafka('snapshot-rebuild');
const eventLog = new EventLog(kafka, topicName('events'), process.env.KAFKA_CONSUMER_GROUP);
const doc = createDocumentClient(createDynamoClient());
const heads = new HeadsTable(doc, tableName('aggregates'));
const readModels = new ReadModelsTable(doc, tableName('readModels'));
const publisher = new KafkaPublisher(createProducer(kafka), { events: topicName('events'), results: topicName('results'), deadLetter: topicName('deadLetter') });
// The event trigger's consumer group, whose committed offsets the read-models rebuild replays up to.
const eventTrigger = new ConsumerOffsets(kafka, topicName('events'), process.env.READ_MODELS_CONSUMER_GROUP ?? functions.eventHandler.trigger.consumerGroupId);
const triggerUuid = process.env.CONTROLLED_TRIGGER_UUID;
/** The commands trigger's consumer group, whose committed offsets the rebuilt checkpoints start from. */
const commandsGroup = process.env.COMMANDS_CONSUMER_GROUP ?? functions.commandHandler.trigger.consumerGroupId;
const defaultGate: CommandGate = triggerUuid === undefined ? lockOnlyGate : new EventSourceMappingGate(createLambdaClient(), triggerUuid);

/** Time kept in hand to write the last checkpoint before Lambda's limit. */
const SAFETY_MS = 60_000;

/** Runs a rebuild or a verify; exported bare for the local runtime and tests, which bring their own gate. */
export const runRebuild = async (
  request: RebuildRequest = {},
  options: { remainingMs?: number; gate?: CommandGate; onProgress?: (p: Progress) => void } = {},
): Promise<AnyRebuildReport> => {
  let lastLog = 0;
  const onProgress =
    options.onProgress ??
    ((p: Progress) => {
      if (Date.now() - lastLog < 5_000 && p.phase === 'reading') return;
      lastLog = Date.now();
      logger.info('rebuild progress', { ...p });
    });
  const deps = { aggregates, heads, eventLog, onProgress };
  const deadline = options.remainingMs === undefined ? {} : { deadline: Date.now() + options.remainingMs - SAFETY_MS };
  if (request.readModels === true) {
    // The event trigger keeps running: wait out a batch in flight before wiping (set by the stack and the CLI).
    const drainMs = Number(process.env.READ_MODELS_DRAIN_SECONDS ?? 0) * 1000;
    return rebuildReadModels({ aggregates, projections, reactions, readModels, eventLog, trigger: eventTrigger, drainMs, onProgress }, deadline);
  }
  if (request.projection !== undefined) {
    const projection = projections.find((p) => p.name === request.projection);
    if (projection === undefined) throw new UnknownProjectionError(request.projection);
    return rebuildProjection({ aggregates, projection, readModels, eventLog, onProgress }, deadline);
  }
  if (request.mode === 'verify') return verifyAggregates(deps);
  return rebuildAggregates(
    {
      ...deps,
      publisher,
      gate: options.gate ?? defaultGate,
      drainMs: Number(process.env.COMMAND_DRAIN_SECONDS ?? 0) * 1000,
      commandsTrigger: { positions: () => triggerPositions(kafka, topicName('commands'), commandsGroup) },
      dedupeWindowMs: retentionMs(topics.commands.retention),
    },
    deadline,
  );
};

/** Disconnects the Kafka clients: for the local runtime and tests. */
export const shutdown = async (): Promise<void> => {
  await Promise.all([publisher.close(), eventLog.close(), eventTrigger.close()]);
};

/** Items of one list a report returns at most; the rest are logged. */
export const REPORT_ITEMS = 100;
/** Bytes (as JSON) all the returned list items of a report take at most. */
export const REPORT_BYTES = 256 * 1024;
/** Items logged per log line for what a report leaves out. */
const LOG_CHUNK = 100;

/** A report as returned: each list cut to its first items, with `<list>Count` its full length. */
export type BoundedReport = Record<string, unknown>;

/**
 * Cuts every list of `report` to its first items (at most `maxItems` each, `maxBytes` of JSON
 * in all) and adds `<list>Count` with the full length and `truncated` naming the cut lists;
 * `leftOut` receives what was cut, list by list.
 */
export const boundReport = (
  report: object,
  leftOut: (list: string, items: readonly unknown[], firstIndex: number) => void,
  maxItems = REPORT_ITEMS,
  maxBytes = REPORT_BYTES,
): BoundedReport => {
  let budget = maxBytes;
  const bounded: BoundedReport = {};
  const truncated: string[] = [];
  for (const [name, value] of Object.entries(report)) {
    if (!Array.isArray(value)) {
      bounded[name] = value;
      continue;
    }
    const kept: unknown[] = [];
    for (const item of value.slice(0, maxItems)) {
      const size = Buffer.byteLength(JSON.stringify(item) ?? 'null');
      if (size > budget) break;
      budget -= size;
      kept.push(item);
    }
    bounded[name] = kept;
    bounded[`${name}Count`] = value.length;
    if (kept.length < value.length) {
      truncated.push(name);
      leftOut(name, value.slice(kept.length), kept.length);
    }
  }
  if (truncated.length > 0) bounded.truncated = truncated;
  return bounded;
};

/** The Lambda handler: the report, bounded; the full lists are in the log. */
export const handler = middy(async (request: RebuildRequest, context: Context) => {
  const report = await runRebuild(request ?? {}, { remainingMs: context.getRemainingTimeInMillis() });
  const bounded = boundReport(report, (list, items, firstIndex) => {
    for (let i = 0; i < items.length; i += LOG_CHUNK)
      logger.info('rebuild report items left out of the response', { list, from: firstIndex + i, items: items.slice(i, i + LOG_CHUNK) });
  });
  logger.info('rebuild finished', { report: bounded });
  return bounded;
}).use(injectLambdaContext(logger));
