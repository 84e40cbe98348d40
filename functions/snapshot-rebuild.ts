/**
 * Lambda entry of the snapshot rebuild, invoked directly: `{"mode":"rebuild"}` (default)
 * rebuilds the aggregates table from the events topic, holding commands until it has caught
 * up; `{"mode":"verify"}` compares the table with the topic and writes nothing;
 * `{"projection":"account-summary"}` rebuilds that projection's rows instead. A rebuild that
 * nears the time limit stops at a checkpoint and reports `incomplete`: invoke again.
 */
import middy from '@middy/core';
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { Context } from 'aws-lambda';
import { tableName, topicName } from './config.ts';
import { createLambdaClient } from './adapters/aws-clients.ts';
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
import { rebuildProjection, type ProjectionRebuildReport } from './rebuild/rebuild-projection.ts';
import { rebuildAggregates, verifyAggregates, type CommandGate, type Progress, type RebuildReport, type VerifyReport } from './rebuild/rebuild-aggregates.ts';

/** What to do. */
export interface RebuildRequest {
  readonly mode?: 'rebuild' | 'verify';
  /** Rebuild this projection's rows rather than the aggregates table. */
  readonly projection?: string;
}

/** The request names a projection the deployment does not have. */
export class UnknownProjectionError extends Error {
  override readonly name = 'UnknownProjectionError';
  constructor(readonly projection: string) {
    super(`unknown projection ${JSON.stringify(projection)}; known: ${projections.map((p) => p.name).join(', ')}`);
  }
}

const logger = new Logger({ serviceName: 'snapshot-rebuild' });
const kafka = createKafka('snapshot-rebuild');
const eventLog = new EventLog(kafka, topicName('events'), process.env.KAFKA_CONSUMER_GROUP);
const doc = createDocumentClient(createDynamoClient());
const heads = new HeadsTable(doc, tableName('aggregates'));
const readModels = new ReadModelsTable(doc, tableName('readModels'));
const publisher = new KafkaPublisher(createProducer(kafka), { events: topicName('events'), results: topicName('results'), deadLetter: topicName('deadLetter') });
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
): Promise<RebuildReport | VerifyReport | ProjectionRebuildReport> => {
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
  await Promise.all([publisher.close(), eventLog.close()]);
};

/** The Lambda handler. */
export const handler = middy(async (request: RebuildRequest, context: Context) => {
  const report = await runRebuild(request ?? {}, { remainingMs: context.getRemainingTimeInMillis() });
  logger.info('rebuild finished', { report });
  return report;
}).use(injectLambdaContext(logger));
