/**
 * kafkajs's log through the project's log creator, entries sent through a real client's
 * logger: errors kafkajs retries by itself (a leader being elected, a broker restarting) are
 * DEBUG lines, shown only at that level; every other error stays an ERROR line.
 */
import { Kafka, logLevel } from 'kafkajs';
import { errorCodes } from 'kafkajs/src/protocol/error.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createKafka } from '../../../functions/adapters/kafka/clients.ts';
import { kafkaLogCreator } from '../../../functions/adapters/kafka/log.ts';

const message = (type: string): string => errorCodes.find((e) => e.type === type)!.message;

/** The lines a client's logger writes, per console method. */
const capture = () => {
  const lines = { error: [] as string[], log: [] as string[] };
  vi.spyOn(console, 'error').mockImplementation((line: string) => void lines.error.push(line));
  vi.spyOn(console, 'log').mockImplementation((line: string) => void lines.log.push(line));
  return lines;
};

/** Logs what kafkajs logs when things fail, through the project's client (ERROR level) or one at DEBUG level. */
const failures = (level: logLevel.ERROR | logLevel.DEBUG): void => {
  const kafka =
    level === logLevel.ERROR
      ? createKafka('kafka-log-test', ['127.0.0.1:1'])
      : new Kafka({ brokers: ['127.0.0.1:1'], logLevel: level, logCreator: kafkaLogCreator });
  const logger = kafka.logger();
  const connection = logger.namespace('Connection');
  connection.error('Response ListOffsets(key: 2, version: 5)', { error: message('NOT_LEADER_FOR_PARTITION'), correlationId: 3 });
  connection.error('Response Metadata(key: 3, version: 6)', { error: message('LEADER_NOT_AVAILABLE'), correlationId: 4 });
  connection.error('Connection error: connect ECONNREFUSED 127.0.0.1:9092', { broker: '127.0.0.1:9092' });
  logger.namespace('BrokerPool').error('Failed to connect to seed broker, trying another broker from the list: Connection error', {});
  logger.namespace('Consumer').error('Crash: KafkaJSNumberOfRetriesExceeded: Connection error', { groupId: 'g' });
  logger.namespace('Consumer').error('Restarting the consumer in 300ms', { groupId: 'g' });
  // What nothing retries: a refused authorization, a crash on a non-retriable error, a handler's own throw.
  connection.error('Response Produce(key: 0, version: 7)', { error: message('TOPIC_AUTHORIZATION_FAILED'), correlationId: 5 });
  logger.namespace('Consumer').error('Crash: KafkaJSNonRetriableError: Topic authorization failed', { groupId: 'g' });
  logger.namespace('Runner').error('Error when calling eachBatch', { error: 'boom' });
};

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the kafkajs log', () => {
  it('keeps the errors kafkajs retries by itself out of the ERROR level, and every other error in it', () => {
    const lines = capture();
    failures(logLevel.ERROR);
    expect(lines.log).toEqual([]);
    expect(lines.error.map((l) => (JSON.parse(l) as { level: string; message: string }).message)).toEqual([
      '[Connection] Response Produce(key: 0, version: 7)',
      '[Consumer] Crash: KafkaJSNonRetriableError: Topic authorization failed',
      '[Runner] Error when calling eachBatch',
    ]);
    expect(lines.error.every((l) => (JSON.parse(l) as { level: string }).level === 'ERROR')).toBe(true);
  });

  it('shows the retried errors as DEBUG lines at DEBUG level', () => {
    const lines = capture();
    failures(logLevel.DEBUG);
    expect(lines.error).toHaveLength(3);
    const debug = lines.log.map((l) => JSON.parse(l) as { level: string; message: string; error?: string });
    expect(debug.map((d) => d.level)).toEqual(Array<string>(6).fill('DEBUG'));
    expect(debug[0]).toMatchObject({
      message: '[Connection] Response ListOffsets(key: 2, version: 5)',
      error: message('NOT_LEADER_FOR_PARTITION'),
    });
  });
});
