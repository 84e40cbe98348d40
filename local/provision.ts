/**
 * The local provisioner: creates every topic and table of the topology (functions/topology.ts)
 * under the names they have in this environment, idempotently. The CDK stack does the same on AWS.
 * Run it alone with `tsx local/provision.ts`.
 */
import {
  CreateTableCommand,
  ResourceInUseException,
  waitUntilTableExists,
  type AttributeDefinition,
  type DynamoDBClient,
  type KeySchemaElement,
} from '@aws-sdk/client-dynamodb';
import { pathToFileURL } from 'node:url';
import { createDynamoClient, createKafka, ensureTopics, type NamedTopic } from '../functions/compose/operator.ts';
import { tableName, topicGenerations } from '../functions/config.ts';
import { tables, topics, type TableKey, type TableSpec, type TopicKey } from '../functions/topology.ts';

/** What a provisioning run created or changed; empty lists when everything was in line already. */
export interface ProvisionResult {
  readonly createdTopics: string[];
  readonly createdTables: string[];
  /** Existing topics whose settings were brought in line with the topology, one line each. */
  readonly alteredTopics: string[];
}

/** The topology's topics under their names in this environment, every generation of the keyed ones. */
export const namedTopics = (): NamedTopic[] =>
  (Object.keys(topics) as TopicKey[]).flatMap((key) =>
    topicGenerations(key).map((g) => ({ ...topics[key], name: g.name, partitions: g.partitions })),
  );

/** The topology's tables under their names in this environment. */
export const namedTables = (): (TableSpec & { readonly name: string })[] =>
  (Object.keys(tables) as TableKey[]).map((key) => ({ ...tables[key], name: tableName(key) }));

/** Creates a table unless it exists, then waits until it is ACTIVE; true when it created it. */
const ensureTable = async (client: DynamoDBClient, spec: TableSpec): Promise<boolean> => {
  const keys: [string, KeySchemaElement['KeyType']][] = [[spec.partitionKey, 'HASH']];
  if (spec.sortKey !== undefined) keys.push([spec.sortKey, 'RANGE']);
  const attributes: AttributeDefinition[] = keys.map(([name]) => ({ AttributeName: name, AttributeType: 'S' }));
  let created = true;
  try {
    await client.send(
      new CreateTableCommand({
        TableName: spec.name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: attributes,
        KeySchema: keys.map(([name, type]) => ({ AttributeName: name, KeyType: type })),
      }),
    );
  } catch (error) {
    if (!(error instanceof ResourceInUseException)) throw error;
    created = false;
  }
  await waitUntilTableExists({ client, maxWaitTime: 60, minDelay: 1, maxDelay: 2 }, { TableName: spec.name });
  return created;
};

/** Creates the topology's topics and tables that do not exist yet. */
export const provision = async (): Promise<ProvisionResult> => {
  const admin = createKafka('kafka-aggregates-provision').admin();
  const dynamo = createDynamoClient();
  try {
    await admin.connect();
    const [topicChanges, tablesCreated] = await Promise.all([
      ensureTopics(admin, namedTopics()),
      Promise.all(namedTables().map(async (spec) => ((await ensureTable(dynamo, spec)) ? [spec.name] : []))),
    ]);
    const alteredTopics = [
      ...topicChanges.altered.map(
        (a) =>
          `${a.topic}: ${Object.entries(a.configs)
            .map(([k, v]) => `${k}=${v}`)
            .join(', ')}`,
      ),
      ...topicChanges.grown.map((g) => `${g.topic}: ${g.from} -> ${g.to} partitions`),
    ];
    return { createdTopics: topicChanges.created, createdTables: tablesCreated.flat(), alteredTopics };
  } finally {
    await admin.disconnect();
    dynamo.destroy();
  }
};

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  provision().then(
    ({ createdTopics, createdTables, alteredTopics }) => {
      console.log(`Topics created: ${createdTopics.join(', ') || 'none (all existed)'}`);
      for (const line of alteredTopics) console.log(`Topic brought in line with the topology: ${line}`);
      console.log(`Tables created: ${createdTables.join(', ') || 'none (all existed)'}`);
    },
    (error: unknown) => {
      console.error(error);
      process.exitCode = 1;
    },
  );
}
