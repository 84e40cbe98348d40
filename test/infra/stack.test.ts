/**
 * Template assertions on the stack as `cdk synth` builds it from the topology, with the
 * default context: one resource family per block, the properties a mistake would break.
 */
import type { CfnElement } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { tableEnv, topicEnv } from '../../functions/config.ts';
import {
  functions,
  retentionMs,
  scopedName,
  tables,
  topicConfig,
  topics,
  type FunctionSpec,
  type TopicKey,
} from '../../functions/topology.ts';
import { TABLE_ACTIONS } from '../../infra/tables.ts';
import { actionsOf, policyStatements, resourcesOf, statementsOfFunction, synthesize, type Synthesized } from './synth.ts';

let synth: Synthesized;
/** The optional features at once: customer-managed table key, e-mail alarm notifications, Powertools names, reserved concurrency. */
let variant: Synthesized;
beforeAll(() => {
  synth = synthesize();
  variant = synthesize({
    context: {
      tableEncryption: 'customer-managed',
      alarmEmail: 'ops@example.com',
      serviceName: 'orders',
      metricsNamespace: 'Orders',
      reservedConcurrency: 'snapshotRebuild:1,commandApi:50',
    },
    skipBundling: true,
  });
}, 180_000);

/** The name the default stack gives a topology topic or consumer group: under the stack name. */
const deployed = (name: string): string => scopedName('KafkaAggregates', name);
const topicOf = (key: TopicKey): string => deployed(topics[key].name);

const handlerFunctions = () =>
  Object.entries(resourcesOf(synth.template, 'AWS::Lambda::Function')).filter(([, r]) =>
    String((r.Properties?.Description as string | undefined) ?? '').startsWith('kafka-aggregates '),
  );

describe('tables', () => {
  it('creates one table per topology table, with its keys', () => {
    const created = Object.values(resourcesOf(synth.template, 'AWS::DynamoDB::Table'));
    expect(created).toHaveLength(Object.keys(tables).length);
    for (const spec of Object.values(tables)) {
      const keys = [
        { AttributeName: spec.partitionKey, KeyType: 'HASH' },
        ...('sortKey' in spec ? [{ AttributeName: spec.sortKey, KeyType: 'RANGE' }] : []),
      ];
      synth.template.hasResourceProperties('AWS::DynamoDB::Table', { KeySchema: keys });
    }
  });

  it('bills on demand, keeps point-in-time recovery, encrypts, and protects every table from deletion', () => {
    for (const table of Object.values(resourcesOf(synth.template, 'AWS::DynamoDB::Table'))) {
      expect(table.Properties).toMatchObject({
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        SSESpecification: { SSEEnabled: true },
        DeletionProtectionEnabled: true,
      });
      expect(table.DeletionPolicy).toBe('Retain');
      expect(table.UpdateReplacePolicy).toBe('Retain');
    }
  });

  it('uses a rotating customer-managed key when the context asks for one', () => {
    const cmk = variant;
    cmk.template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    for (const table of Object.values(resourcesOf(cmk.template, 'AWS::DynamoDB::Table'))) {
      expect(table.Properties?.SSESpecification).toMatchObject({
        SSEEnabled: true,
        SSEType: 'KMS',
        KMSMasterKeyId: expect.anything() as unknown,
      });
    }
    expect(
      policyStatements(cmk.template)
        .flatMap(actionsOf)
        .filter((a) => a.includes('*')),
    ).toEqual([]);
  });
});

describe('MSK cluster', () => {
  it('is an MSK Serverless cluster with IAM authentication in the private subnets', () => {
    synth.template.resourceCountIs('AWS::MSK::ServerlessCluster', 1);
    synth.template.hasResourceProperties('AWS::MSK::ServerlessCluster', {
      ClientAuthentication: { Sasl: { Iam: { Enabled: true } } },
      VpcConfigs: [
        {
          SubnetIds: [Match.objectLike({ Ref: Match.anyValue() }), Match.objectLike({ Ref: Match.anyValue() })],
          SecurityGroups: [Match.anyValue()],
        },
      ],
    });
  });

  it('reads the IAM bootstrap brokers with GetBootstrapBrokers on that cluster only', () => {
    const [lookup] = Object.values(resourcesOf(synth.template, 'Custom::AWS'));
    const call = JSON.stringify(lookup?.Properties?.Create);
    expect(call).toContain('\\"service\\":\\"Kafka\\"');
    expect(call).toContain('\\"action\\":\\"getBootstrapBrokers\\"');
    expect(call).toContain('BootstrapBrokerStringSaslIam');
    const lookups = policyStatements(synth.template).filter((s) => actionsOf(s).includes('kafka:GetBootstrapBrokers'));
    for (const s of lookups) expect(s.Resource).not.toBe('*');
  });

  it('retains the cluster, its security group, and the VPC and subnets it sits in, on deletion and on replacement', () => {
    const retained = (type: string) => Object.values(resourcesOf(synth.template, type));
    const [cluster] = retained('AWS::MSK::ServerlessCluster');
    expect(cluster).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    const clusterGroups =
      (cluster?.Properties?.VpcConfigs as { SecurityGroups: { 'Fn::GetAtt': [string, string] }[] }[])[0]?.SecurityGroups ?? [];
    for (const ref of clusterGroups) {
      expect(resourcesOf(synth.template, 'AWS::EC2::SecurityGroup')[ref['Fn::GetAtt'][0]]).toMatchObject({
        DeletionPolicy: 'Retain',
        UpdateReplacePolicy: 'Retain',
      });
    }
    expect(clusterGroups).toHaveLength(1);
    for (const type of ['AWS::EC2::VPC', 'AWS::EC2::Subnet']) {
      expect(retained(type).length, type).toBeGreaterThan(0);
      for (const r of retained(type)) expect(r, type).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    }
  });

  it('lets the cluster security group in from itself (the trigger pollers) and from the functions on 9098 only', () => {
    const rules = Object.values(resourcesOf(synth.template, 'AWS::EC2::SecurityGroupIngress')).filter(
      (r) => r.Properties?.FromPort === 9098,
    );
    expect(rules).toHaveLength(2);
    for (const r of rules) expect(r.Properties).toMatchObject({ IpProtocol: 'tcp', FromPort: 9098, ToPort: 9098 });
  });
});

describe('network', () => {
  it('has private subnets without NAT, a DynamoDB gateway endpoint and a Lambda interface endpoint, and no STS endpoint', () => {
    synth.template.resourceCountIs('AWS::EC2::NatGateway', 0);
    synth.template.resourceCountIs('AWS::EC2::InternetGateway', 0);
    synth.template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
      VpcEndpointType: 'Gateway',
      ServiceName: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith([Match.stringLikeRegexp('dynamodb')])]) }),
    });
    const interfaces = Object.values(resourcesOf(synth.template, 'AWS::EC2::VPCEndpoint')).filter(
      (e) => e.Properties?.VpcEndpointType === 'Interface',
    );
    // The rebuild calls the Lambda API; the triggers need no endpoint in provisioned mode, and nothing calls STS.
    expect(interfaces.map((e) => JSON.stringify(e.Properties?.ServiceName))).toEqual([expect.stringContaining('.lambda')]);
    for (const e of interfaces) expect(e.Properties?.PrivateDnsEnabled).toBe(true);
  });
});

describe('topics', () => {
  it('creates every topology topic with its partitions and retention through the topics custom resource', () => {
    const [resource] = Object.values(resourcesOf(synth.template, 'Custom::KafkaTopics'));
    const declared = JSON.parse(String(resource?.Properties?.Topics)) as { name: string; partitions: number; retention: unknown }[];
    expect(declared.map((t) => t.name).sort()).toEqual(
      Object.values(topics)
        .map((t) => deployed(t.name))
        .sort(),
    );
    for (const spec of Object.values(topics)) {
      const topic = declared.find((t) => t.name === deployed(spec.name));
      expect(topic?.partitions).toBe(spec.partitions);
      expect(retentionMs(topic?.retention as never)).toBe(retentionMs(spec.retention));
    }
    expect(resource?.Properties?.Brokers).toEqual({ 'Fn::GetAtt': [expect.any(String), 'BootstrapBrokerStringSaslIam'] });
  });

  it('keeps the events topic forever by time and by size (retention.ms and retention.bytes -1), and marks commands and events keyed', () => {
    const [resource] = Object.values(resourcesOf(synth.template, 'Custom::KafkaTopics'));
    const declared = JSON.parse(String(resource?.Properties?.Topics)) as { name: string; retention: 'forever'; keyed: boolean }[];
    const events = declared.find((t) => t.name === topicOf('events'));
    expect(events).toMatchObject({ retention: 'forever', keyed: true });
    expect(topicConfig(events as never)).toMatchObject({ 'retention.ms': '-1', 'retention.bytes': '-1' });
    expect(declared.find((t) => t.name === topicOf('commands'))?.keyed).toBe(true);
  });

  it('lets the topic provider create, grow, describe and alter the configs of exactly the topology topics, and nothing more on Kafka', () => {
    const provider = Object.entries(resourcesOf(synth.template, 'AWS::Lambda::Function')).find(([id]) =>
      id.startsWith('TopicsProviderFunction'),
    );
    expect(provider).toBeDefined();
    const kafka = policyStatements(synth.template)
      .filter((s) => s.owner.startsWith('TopicsProviderFunction'))
      .flatMap(actionsOf)
      .filter((a) => a.startsWith('kafka'));
    expect(new Set(kafka)).toEqual(
      new Set([
        'kafka-cluster:Connect',
        'kafka-cluster:DescribeTopic',
        'kafka-cluster:CreateTopic',
        'kafka-cluster:AlterTopic',
        'kafka-cluster:DescribeTopicDynamicConfiguration',
        'kafka-cluster:AlterTopicDynamicConfiguration',
      ]),
    );
    const topicStatements = policyStatements(synth.template).filter(
      (s) => s.owner.startsWith('TopicsProviderFunction') && actionsOf(s).includes('kafka-cluster:AlterTopicDynamicConfiguration'),
    );
    for (const s of topicStatements) expect(JSON.stringify(s.Resource)).toMatch(/:topic\//);
  });
});

describe('functions', () => {
  const functionId = (key: string): string => {
    const fn = synth.stack.handlers.functions[key];
    if (fn === undefined) throw new Error(`no function ${key}`);
    return synth.stack.getLogicalId(fn.node.defaultChild as never);
  };

  it('reserves no concurrency by default (a reservation fails on accounts whose quota is 10), and what the context asks for', () => {
    const concurrency = (template: typeof synth.template, key: string) =>
      resourcesOf(template, 'AWS::Lambda::Function')[functionId(key)]?.Properties?.ReservedConcurrentExecutions;
    for (const key of Object.keys(functions)) expect(concurrency(synth.template, key)).toBeUndefined();
    expect(concurrency(variant.template, 'snapshotRebuild')).toBe(1);
    expect(concurrency(variant.template, 'commandApi')).toBe(50);
    expect(concurrency(variant.template, 'commandHandler')).toBeUndefined();
  });

  it('lets the command handler read its own topic back with throwaway groups of its own, and delete them, and nothing more of Kafka groups', () => {
    const statements = statementsOfFunction(synth.template, functionId('commandHandler'));
    const groupStatements = statements.filter((st) => actionsOf(st).some((a) => a.includes('Group')));
    const resources = JSON.stringify(groupStatements.map((st) => st.Resource));
    expect(resources).toContain(deployed('kafka-aggregates-command-handler-reader-*'));
    expect(resources).toContain(deployed(functions.commandHandler.trigger.consumerGroupId));
    expect(groupStatements.flatMap(actionsOf).sort()).toEqual(
      expect.arrayContaining(['kafka-cluster:AlterGroup', 'kafka-cluster:DeleteGroup', 'kafka-cluster:DescribeGroup']),
    );
    const deletes = groupStatements.filter((st) => actionsOf(st).includes('kafka-cluster:DeleteGroup'));
    expect(JSON.stringify(deletes.map((st) => st.Resource))).not.toContain(`${functions.commandHandler.trigger.consumerGroupId}"`);
  });

  it('deploys one function per topology function, ARM64 on Node.js 22 with source maps', () => {
    const deployed = handlerFunctions();
    expect(deployed).toHaveLength(Object.keys(functions).length);
    for (const [, fn] of [
      ...deployed,
      ...Object.entries(resourcesOf(synth.template, 'AWS::Lambda::Function')).filter(([id]) => id.startsWith('TopicsProviderFunction')),
    ]) {
      expect(fn.Properties).toMatchObject({ Runtime: 'nodejs22.x', Architectures: ['arm64'], Handler: 'index.handler' });
      expect((fn.Properties?.Environment as { Variables: Record<string, unknown> }).Variables.NODE_OPTIONS).toBe('--enable-source-maps');
      expect(fn.Properties?.VpcConfig).toMatchObject({
        SubnetIds: expect.any(Array) as unknown,
        SecurityGroupIds: expect.any(Array) as unknown,
      });
    }
  });

  it('gives each function its timeout, memory, the names of its own tables only (those it writes or reads), and the topic, Kafka and Powertools variables', () => {
    for (const [key, spec] of Object.entries(functions as Record<string, FunctionSpec>)) {
      const tableVariables = Object.fromEntries(
        (['aggregates', 'readModels'] as const).map((t) => [
          tableEnv[t],
          [...spec.tables, ...(spec.readsTables ?? [])].includes(t)
            ? { Ref: Match.stringLikeRegexp(`^Tables${t === 'aggregates' ? 'Aggregates' : 'ReadModels'}`) }
            : Match.absent(),
        ]),
      );
      synth.template.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp(`^kafka-aggregates ${key}`),
        Timeout: spec.timeoutSeconds,
        MemorySize: spec.memoryMb,
        Environment: {
          Variables: Match.objectLike({
            ...tableVariables,
            [topicEnv.commands]: topicOf('commands'),
            [topicEnv.events]: topicOf('events'),
            [topicEnv.results]: topicOf('results'),
            [topicEnv.deadLetter]: topicOf('deadLetter'),
            KAFKA_BROKERS: { 'Fn::GetAtt': [Match.stringLikeRegexp('^KafkaBootstrapBrokers'), 'BootstrapBrokerStringSaslIam'] },
            KAFKA_AUTH: 'iam',
            POWERTOOLS_SERVICE_NAME: 'kafka-aggregates',
            POWERTOOLS_METRICS_NAMESPACE: 'KafkaAggregates',
            NODE_OPTIONS: '--enable-source-maps',
          }),
        },
      });
    }
  });
});

describe('settings', () => {
  it('gives the functions the Powertools service name and metrics namespace of the settings, and alarms on those', () => {
    for (const key of Object.keys(functions)) {
      variant.template.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp(`^kafka-aggregates ${key}`),
        Environment: { Variables: Match.objectLike({ POWERTOOLS_SERVICE_NAME: 'orders', POWERTOOLS_METRICS_NAMESPACE: 'Orders' }) },
      });
    }
    variant.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: 'deadLettered',
      Namespace: 'Orders',
      Dimensions: [{ Name: 'service', Value: 'orders' }],
    });
  });
});

describe('triggers', () => {
  const triggered = Object.values(functions as Record<string, FunctionSpec>).flatMap((spec) =>
    spec.trigger === undefined ? [] : [spec.trigger],
  );

  it('maps each trigger to its topic, batch size, window and consumer group, from the oldest record', () => {
    synth.template.resourceCountIs('AWS::Lambda::EventSourceMapping', triggered.length);
    for (const trigger of triggered) {
      synth.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^KafkaCluster'), 'Arn'] },
        Topics: [topicOf(trigger.topic)],
        BatchSize: trigger.batchSize,
        MaximumBatchingWindowInSeconds: trigger.maxBatchingWindowSeconds,
        AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: deployed(trigger.consumerGroupId) },
        StartingPosition: 'TRIM_HORIZON',
      });
    }
  });

  it('blocks instead of skipping: no on-failure destination, unbounded retries, no record age limit, no bisect, partial batch responses', () => {
    const mappings = Object.values(resourcesOf(synth.template, 'AWS::Lambda::EventSourceMapping'));
    expect(mappings).toHaveLength(2);
    for (const mapping of mappings) {
      expect(mapping.Properties?.DestinationConfig).toBeUndefined();
      expect(mapping.Properties?.MaximumRecordAgeInSeconds).toBeUndefined();
      expect(mapping.Properties).toMatchObject({
        MaximumRetryAttempts: -1,
        BisectBatchOnFunctionError: false,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
    }
  });

  it('runs both triggers in provisioned mode in one shared poller group, at most one poller per partition each', () => {
    const mappings = Object.values(resourcesOf(synth.template, 'AWS::Lambda::EventSourceMapping'));
    const groups = new Set(mappings.map((m) => (m.Properties?.ProvisionedPollerConfig as { PollerGroupName?: string }).PollerGroupName));
    expect([...groups]).toEqual([`${synth.stack.stackName}-pollers`]);
    for (const mapping of mappings) {
      const source = Object.values(topics).find((t) => deployed(t.name) === (mapping.Properties?.Topics as string[])[0]);
      expect(mapping.Properties?.ProvisionedPollerConfig).toMatchObject({ MinimumPollers: 1, MaximumPollers: source?.partitions });
    }
  });

  it('waits for the topics to exist before creating a mapping', () => {
    for (const mapping of Object.values(resourcesOf(synth.template, 'AWS::Lambda::EventSourceMapping'))) {
      expect([mapping.DependsOn ?? []].flat()).toContain(
        synth.stack.getLogicalId(synth.stack.topics.resource.node.defaultChild as CfnElement),
      );
    }
  });
});

describe('IAM', () => {
  const tableStatements = (key: string) => {
    const fn = synth.stack.handlers.functions[key];
    if (fn === undefined) throw new Error(`no function ${key}`);
    return statementsOfFunction(synth.template, synth.stack.getLogicalId(fn.node.defaultChild as never)).filter((s) =>
      actionsOf(s).some((a) => a.startsWith('dynamodb:')),
    );
  };

  it('grants each function its own tables only: the command handler the aggregates, the event handler the read models, the rebuild both', () => {
    const tablesOf = (key: string) => {
      const text = JSON.stringify(tableStatements(key).map((s) => s.Resource));
      return ['Aggregates', 'ReadModels'].filter((t) => text.includes(`Tables${t}`));
    };
    expect(tablesOf('commandHandler')).toEqual(['Aggregates']);
    expect(tablesOf('eventHandler')).toEqual(['ReadModels']);
    expect(tablesOf('snapshotRebuild')).toEqual(['Aggregates', 'ReadModels']);
  });

  it('grants the handlers the item actions they call (both handlers also batched writes: heads, parked records) and the rebuild also its scans, queries and deletes, nothing else on DynamoDB', () => {
    const actions = (key: string) => new Set(tableStatements(key).flatMap(actionsOf));
    expect(actions('commandHandler')).toEqual(new Set(TABLE_ACTIONS.batches));
    expect(actions('eventHandler')).toEqual(new Set(TABLE_ACTIONS.batches));
    expect(actions('snapshotRebuild')).toEqual(new Set(TABLE_ACTIONS.maintenance));
  });

  it("lets the rebuild read the committed offsets of both triggers' groups, and tells it the groups and the event side's drain time", () => {
    const fn = synth.stack.handlers.functions.snapshotRebuild;
    if (fn === undefined) throw new Error('no rebuild');
    const id = synth.stack.getLogicalId(fn.node.defaultChild as never);
    const describe = JSON.stringify(
      statementsOfFunction(synth.template, id)
        .filter((s) => actionsOf(s).includes('kafka-cluster:DescribeGroup'))
        .map((s) => s.Resource),
    );
    expect(describe).toContain(`/${deployed(functions.eventHandler.trigger.consumerGroupId)}"`);
    expect(describe).toContain(`/${deployed(functions.commandHandler.trigger.consumerGroupId)}"`);
    const variables = (
      resourcesOf(synth.template, 'AWS::Lambda::Function')[id]?.Properties?.Environment as { Variables: Record<string, unknown> }
    ).Variables;
    expect(variables).toMatchObject({
      READ_MODELS_CONSUMER_GROUP: deployed(functions.eventHandler.trigger.consumerGroupId),
      READ_MODELS_DRAIN_SECONDS: String(functions.eventHandler.timeoutSeconds),
      COMMANDS_CONSUMER_GROUP: deployed(functions.commandHandler.trigger.consumerGroupId),
    });
  });

  it("tells each triggered function its trigger's consumer group (the event handler checks its table against it)", () => {
    for (const key of ['commandHandler', 'eventHandler'] as const) {
      synth.template.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp(`^kafka-aggregates ${key}`),
        Environment: { Variables: Match.objectLike({ TRIGGER_CONSUMER_GROUP: deployed(functions[key].trigger.consumerGroupId) }) },
      });
    }
  });

  it('has no wildcard action in any policy', () => {
    const actions = policyStatements(synth.template).flatMap(actionsOf);
    expect(actions.length).toBeGreaterThan(0);
    expect(actions.filter((a) => a.includes('*'))).toEqual([]);
  });

  it('uses Resource "*" only for calls that take no resource ARN', () => {
    const allowedOnStar = new Set(['ec2:DescribeVpcs', 'ec2:DescribeSubnets', 'ec2:DescribeSecurityGroups']);
    const onStar = policyStatements(synth.template).filter(
      (s) => s.Resource === '*' || (Array.isArray(s.Resource) && s.Resource.includes('*')),
    );
    expect(onStar.flatMap(actionsOf).filter((a) => !allowedOnStar.has(a))).toEqual([]);
  });

  it('scopes Kafka data access to topic and group ARNs of the cluster', () => {
    const data = policyStatements(synth.template).filter((s) =>
      actionsOf(s).some((a) => ['kafka-cluster:ReadData', 'kafka-cluster:WriteData', 'kafka-cluster:AlterGroup'].includes(a)),
    );
    expect(data.length).toBeGreaterThan(0);
    for (const s of data) expect(JSON.stringify(s.Resource)).toMatch(/:(topic|group)\//);
  });
});

describe('monitoring', () => {
  it('alarms on errors of every function, offset lag of every trigger (AWS/Lambda by function), dead-lettered records and halted partitions', () => {
    const alarms = Object.values(resourcesOf(synth.template, 'AWS::CloudWatch::Alarm')).map((a) => a.Properties ?? {});
    const named = (metric: string) => alarms.filter((a) => a.MetricName === metric);
    expect(named('Errors')).toHaveLength(Object.keys(functions).length);
    const lag = named('OffsetLag');
    expect(lag).toHaveLength(Object.values(functions).filter((f) => 'trigger' in f).length);
    for (const a of lag) {
      expect(a).toMatchObject({ Namespace: 'AWS/Lambda', Dimensions: [{ Name: 'FunctionName', Value: expect.anything() as unknown }] });
    }
    for (const metric of ['deadLettered', 'gapsHalted', 'unreadableHalted']) {
      expect(named(metric)).toEqual([
        expect.objectContaining({
          Namespace: 'KafkaAggregates',
          Statistic: 'Sum',
          Dimensions: [{ Name: 'service', Value: 'kafka-aggregates' }],
        }) as unknown,
      ]);
    }
    // Nothing from AWS/Kafka: its dimensions differ between MSK Serverless and provisioned clusters.
    expect(alarms.filter((a) => a.Namespace === 'AWS/Kafka')).toEqual([]);
    synth.template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
  });

  it('notifies an e-mail subscription over an HTTPS-only topic when alarmEmail is set', () => {
    const withEmail = variant;
    withEmail.template.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'ops@example.com' });
    for (const alarm of Object.values(resourcesOf(withEmail.template, 'AWS::CloudWatch::Alarm'))) {
      expect(alarm.Properties?.AlarmActions).toEqual([{ Ref: expect.stringMatching(/^MonitoringAlarmTopic/) as unknown }]);
    }
  });
});
