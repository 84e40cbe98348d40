/**
 * What every side's composition shares: the `Wiring` a caller may give instead of the
 * configured defaults, and the clients built from it. Each side has a module of its own
 * (command-side.ts, event-side.ts, rebuild.ts, command-api.ts), so that a Lambda bundle
 * carries only its own side's adapters.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Kafka } from 'kafkajs';
import { createDocumentClient, createDynamoClient } from '../adapters/dynamodb/clients.ts';
import { createKafka } from '../adapters/kafka/clients.ts';
import { groups as configuredGroups, names as configuredNames, type Groups, type Names } from '../config.ts';

/** What a caller may give instead of the configured defaults. */
export interface Wiring {
  /** Topic and table names. @default config.ts `names()` */
  readonly names?: Names;
  /** Kafka client. @default one per composition, named after it */
  readonly kafka?: Kafka;
  /** DynamoDB client (a test's may count requests). @default one per composition */
  readonly dynamo?: DynamoDBClient;
  /** Consumer groups (a second local system runs its triggers under groups of its own). @default config.ts `groups()` */
  readonly groups?: Partial<Groups>;
}

/** The clients of a composition, and how to close what it created. */
export const clients = (wiring: Wiring, clientId: string) => {
  const dynamo = wiring.dynamo ?? createDynamoClient();
  return {
    names: wiring.names ?? configuredNames(),
    groups: { ...configuredGroups(), ...wiring.groups },
    kafka: wiring.kafka ?? createKafka(clientId),
    doc: createDocumentClient(dynamo),
    /** Destroys the DynamoDB client if this composition created it. */
    release: () => {
      if (wiring.dynamo === undefined) dynamo.destroy();
    },
  };
};
