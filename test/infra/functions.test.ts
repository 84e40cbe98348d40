/**
 * Functions the topology will add later are deployed from their spec alone: an event
 * handler with its own trigger, and a snapshot rebuild, invoked directly, that may pause and
 * resume the command trigger and nothing more.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { functions as topologyFunctions, topics } from '../../functions/topology.ts';
import type { DeployableFunctionSpec } from '../../infra/handlers.ts';
import { actionsOf, resourcesOf, statementsOfFunction, synthesize, type Synthesized } from './synth.ts';

const future: Record<string, DeployableFunctionSpec> = {
  ...topologyFunctions,
  eventHandler: {
    entry: 'functions/handlers/topics-provider.ts',
    trigger: { topic: 'events', batchSize: 100, maxBatchingWindowSeconds: 2, consumerGroupId: 'kafka-aggregates-event-handler' },
    timeoutSeconds: 30,
    memoryMb: 256,
    tables: ['readModels'],
  },
  snapshotRebuild: {
    entry: 'functions/handlers/topics-provider.ts',
    timeoutSeconds: 900,
    memoryMb: 1024,
    controlsTriggerOf: 'commandHandler',
    reads: ['events'],
    writes: [],
    tables: ['aggregates'],
  },
};

let synth: Synthesized;
beforeAll(() => {
  // A shared environment that names a stack variable too: the stack's value must win.
  synth = synthesize({ skipBundling: true, overrides: { functions: future, environment: { KAFKA_AUTH: 'none', LOG_LEVEL: 'DEBUG' } } });
}, 120_000);

const logicalId = (key: string): string => {
  const fn = synth.stack.handlers.functions[key];
  if (fn === undefined) throw new Error(`no function ${key}`);
  return synth.stack.getLogicalId(fn.node.defaultChild as never);
};
const mappingId = (key: string): string => {
  const mapping = synth.stack.handlers.triggers[key];
  if (mapping === undefined) throw new Error(`no trigger for ${key}`);
  return synth.stack.getLogicalId(mapping.node.defaultChild as never);
};

describe('functions added to the topology', () => {
  it('deploys each with a trigger only where the spec has one', () => {
    const mappings = resourcesOf(synth.template, 'AWS::Lambda::EventSourceMapping');
    expect(Object.keys(mappings).sort()).toEqual([mappingId('commandHandler'), mappingId('eventHandler')].sort());
    expect(mappings[mappingId('eventHandler')]?.Properties).toMatchObject({
      Topics: [`KafkaAggregates.${topics.events.name}`],
      BatchSize: 100,
      MaximumBatchingWindowInSeconds: 2,
      AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: 'KafkaAggregates.kafka-aggregates-event-handler' },
      StartingPosition: 'TRIM_HORIZON',
    });
    expect(synth.stack.handlers.triggers.snapshotRebuild).toBeUndefined();
  });

  it('lets the rebuild get and update the command trigger, on that mapping only', () => {
    const lambdaStatements = statementsOfFunction(synth.template, logicalId('snapshotRebuild')).filter((s) =>
      actionsOf(s).some((a) => a.startsWith('lambda:')),
    );
    expect(lambdaStatements).toHaveLength(1);
    expect(new Set(actionsOf(lambdaStatements[0]!))).toEqual(new Set(['lambda:GetEventSourceMapping', 'lambda:UpdateEventSourceMapping']));
    const resource = JSON.stringify(lambdaStatements[0]!.Resource);
    expect(resource).toContain(`:event-source-mapping:`);
    expect(resource).toContain(`"Ref":"${mappingId('commandHandler')}"`);
    expect(resource).not.toContain(mappingId('eventHandler'));
  });

  it('tells the rebuild which mapping it controls', () => {
    const fn = resourcesOf(synth.template, 'AWS::Lambda::Function')[logicalId('snapshotRebuild')];
    expect((fn?.Properties?.Environment as { Variables: Record<string, unknown> }).Variables.CONTROLLED_TRIGGER_UUID).toEqual({
      Ref: mappingId('commandHandler'),
    });
  });

  it('gives no other function control over any trigger', () => {
    for (const key of ['commandHandler', 'eventHandler']) {
      expect(
        statementsOfFunction(synth.template, logicalId(key))
          .flatMap(actionsOf)
          .filter((a) => a.startsWith('lambda:')),
      ).toEqual([]);
    }
  });

  it('grants only the tables and topics a spec names', () => {
    const rebuild = statementsOfFunction(synth.template, logicalId('snapshotRebuild'));
    expect(rebuild.flatMap(actionsOf)).not.toContain('kafka-cluster:WriteData');
    const dynamo = rebuild.filter((s) => actionsOf(s).some((a) => a.startsWith('dynamodb:')));
    expect(JSON.stringify(dynamo)).toContain('TablesAggregates');
    expect(JSON.stringify(dynamo)).not.toContain('TablesReadModels');
    const reads = rebuild.filter((s) => actionsOf(s).includes('kafka-cluster:ReadData'));
    expect(JSON.stringify(reads)).toContain(`/KafkaAggregates.${topics.events.name}"`);
    expect(JSON.stringify(reads)).not.toContain(`/KafkaAggregates.${topics.commands.name}"`);
  });

  it('keeps the stack variables when a shared environment names the same ones', () => {
    const withEnv = synth;
    for (const fn of Object.values(withEnv.stack.handlers.functions)) {
      const variables = (
        resourcesOf(withEnv.template, 'AWS::Lambda::Function')[withEnv.stack.getLogicalId(fn.node.defaultChild as never)]?.Properties
          ?.Environment as { Variables: Record<string, unknown> }
      ).Variables;
      expect(variables).toMatchObject({ KAFKA_AUTH: 'iam', LOG_LEVEL: 'DEBUG' });
    }
  });
});
