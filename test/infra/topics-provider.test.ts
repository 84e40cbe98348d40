/**
 * The topic custom resource's own logic: its properties parse into topic specs, and Delete
 * never touches Kafka (the events topic is the log of record). Creating topics against a
 * real broker is `ensureTopics`, tested with the local stack.
 */
import type { CloudFormationCustomResourceDeleteEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { topics } from '../../functions/topology.ts';
import { onEvent, parseProperties } from '../../functions/handlers/topics-provider.ts';

const properties = {
  ServiceToken: 'arn:aws:lambda:eu-west-1:123456789012:function:provider',
  Brokers: 'b-1.example:9098, b-2.example:9098',
  Topics: JSON.stringify(Object.values(topics)),
  ReplicationFactor: '-1',
};

describe('topics provider', () => {
  it('parses brokers, the topology topics and the replication factor from the resource properties', () => {
    expect(parseProperties(properties)).toEqual({
      brokers: ['b-1.example:9098', 'b-2.example:9098'],
      topics: Object.values(topics),
      replicationFactor: -1,
    });
  });

  it('rejects a topic without partitions rather than creating a wrong one', () => {
    expect(() =>
      parseProperties({ ...properties, Topics: JSON.stringify([{ name: 'commands', retention: 'forever', description: '' }]) }),
    ).toThrow();
  });

  it('keeps every topic on Delete and answers without connecting to Kafka', async () => {
    const event: CloudFormationCustomResourceDeleteEvent = {
      RequestType: 'Delete',
      ServiceToken: properties.ServiceToken,
      ResponseURL: 'https://example.invalid/response',
      StackId: 'arn:aws:cloudformation:eu-west-1:123456789012:stack/KafkaAggregates/1',
      RequestId: 'r-1',
      LogicalResourceId: 'TopicsE2E6B4B8',
      PhysicalResourceId: 'kafka-aggregates-topics',
      ResourceType: 'Custom::KafkaTopics',
      // Brokers that do not resolve: a connection attempt would fail the test.
      ResourceProperties: { ...properties, Brokers: 'unreachable.invalid:9098' },
    };
    await expect(onEvent(event)).resolves.toEqual({
      PhysicalResourceId: 'kafka-aggregates-topics',
      Data: { Created: '', Altered: '', Topics: '' },
    });
  });
});
