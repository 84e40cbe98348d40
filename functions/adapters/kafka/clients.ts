/**
 * Kafka clients for every environment: plaintext for the local broker or any broker given by
 * `KAFKA_BROKERS`, IAM (SASL/OAUTHBEARER over TLS) for Amazon MSK when `KAFKA_AUTH=iam`.
 */
import { Kafka, logLevel, Partitioners, type Admin, type Producer } from 'kafkajs';
import { awsRegion, kafkaAuth, kafkaBrokers } from '../../config.ts';
import { kafkaLogCreator } from './log.ts';
import { mskIamTokenProvider } from './msk-iam.ts';

/** A Kafka client for the configured brokers and authentication; errors kafkajs retries by itself log at DEBUG (./log.ts). */
export const createKafka = (clientId: string, brokers: string[] = kafkaBrokers()): Kafka =>
  new Kafka({
    clientId,
    brokers,
    logLevel: logLevel.ERROR,
    logCreator: kafkaLogCreator,
    ...(kafkaAuth() === 'iam'
      ? {
          ssl: true,
          sasl: { mechanism: 'oauthbearer', oauthBearerProvider: mskIamTokenProvider(awsRegion()) },
        }
      : {}),
  });

/**
 * An idempotent producer that waits for all in-sync replicas. The default (murmur2)
 * partitioner matches the Java client, so a key lands on the same partition whoever sends it.
 */
export const createProducer = (kafka: Kafka): Producer =>
  kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner,
  });

/** A producer that connects on first use, reconnects after a failed connect, and can be closed. */
export class ProducerConnection {
  private connected: Promise<void> | undefined;

  constructor(private readonly producer: Producer) {}

  /** The producer, connected. */
  async get(): Promise<Producer> {
    this.connected ??= this.producer.connect().catch((error: unknown) => {
      this.connected = undefined;
      throw error;
    });
    await this.connected;
    return this.producer;
  }

  /** Disconnects if connected. */
  async close(): Promise<void> {
    if (this.connected !== undefined) await this.producer.disconnect();
    this.connected = undefined;
  }
}

/** One admin client, connected on first use however many calls wait for it; a failed connect is tried again by the next call. */
export class SharedAdmin {
  private admin: Promise<Admin> | undefined;

  constructor(private readonly kafka: Kafka) {}

  /** The connected admin client. */
  get(): Promise<Admin> {
    this.admin ??= (async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    })().catch((error: unknown) => {
      this.admin = undefined;
      throw error;
    });
    return this.admin;
  }

  /** Disconnects it, if it ever connected. */
  async close(): Promise<void> {
    const admin = this.admin;
    this.admin = undefined;
    await (await admin?.catch(() => undefined))?.disconnect();
  }
}
