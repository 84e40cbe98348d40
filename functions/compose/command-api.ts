/**
 * The command API wired from configuration: a producer to the commands topic, consistent reads
 * of the aggregates and read-models tables (functions/handlers/command-api.ts, npm start).
 */
import { DynamoCommandClaims } from '../adapters/dynamodb/command-claims.ts';
import { CommandOutcomes } from '../adapters/dynamodb/command-outcomes.ts';
import { ReadModelsTable } from '../adapters/dynamodb/read-models-table.ts';
import { createProducer } from '../adapters/kafka/clients.ts';
import { KafkaCommandSender } from '../adapters/kafka/command-sender.ts';
import { createCommandApi, type CommandApiDeps, type HttpRequest, type HttpResponse, type RequestContext } from '../command-api/api.ts';
import { commandApiWait, partitionGenerations, retentions } from '../config.ts';
import { generationName } from '../core/generations.ts';
import { activeProjectionPk } from '../core/projection-versions.ts';
import { aggregates } from '../domain/index.ts';
import { projectionRowKey } from '../event/ports.ts';
import { projections } from '../projections/index.ts';
import { clients, type Wiring } from './wiring.ts';

/** The command API, wired. */
export interface CommandApi {
  readonly handle: (request: HttpRequest, context?: RequestContext) => Promise<HttpResponse>;
  close(): Promise<void>;
}

/** The command API: a producer to the commands topic, consistent reads of the aggregates and read-models tables. */
export const composeCommandApi = (wiring: Wiring = {}, hooks: Pick<CommandApiDeps, 'onWait' | 'onError'> = {}): CommandApi => {
  const { names, kafka, doc, release } = clients(wiring, 'command-api');
  // Commands go to the newest generation of the commands topic, as it is at each send.
  const sender = new KafkaCommandSender(createProducer(kafka), () =>
    generationName(names.topics.commands, partitionGenerations().length - 1),
  );
  const readModels = new ReadModelsTable(doc, names.tables.readModels);
  return {
    handle: createCommandApi({
      aggregates,
      projections: [...new Set(projections.map((p) => p.name))],
      sender,
      outcomes: new CommandOutcomes(doc, names.tables.aggregates),
      claims: new DynamoCommandClaims(doc, names.tables.aggregates, retentions().dedupeWindowMs),
      // The version that serves reads (core/projection-versions.ts): one more read only for a projection with versions.
      rows: {
        row: async (projection, rowId) =>
          (await readModels.get(projectionRowKey(await activeProjectionPk(readModels, projections, projection), rowId)))?.data,
      },
      settings: { ...commandApiWait(), commandsTopic: names.topics.commands },
      ...hooks,
    }),
    close: async () => {
      await sender.close();
      release();
    },
  };
};
