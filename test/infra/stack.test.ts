/**
 * Template assertions on the stack as `cdk synth` builds it from the topology, with the
 * default context: one resource family per block, the properties a mistake would break.
 */
import type { CfnElement } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { tableEnv, topicEnv } from '../../functions/config.ts';
import { functions, retentionMs, tables, topics, type FunctionSpec } from '../../functions/topology.ts';
import { actionsOf, policyStatements, resourcesOf, synthesize, type Synthesized } from './synth.ts';

let synth: Synthesized;
/** The optional features at once: customer-managed table key and e-mail alarm notifications. */
let variant: Synthesized;
beforeAll(() => {
  synth = synthesize();
  variant = synthesize({ context: { tableEncryption: 'customer-managed', alarmEmail: 'ops@example.com' }, skipBundling: true });
}, 180_000);

const handlerFunctions = () =>
  Object.entries(resourcesOf(synth.template, 'AWS::Lambda::Function')).filter(([, r]) =>
    String((r.Properties?.Description as string | undefined) ?? '').startsWith('kafka-aggregates '),
  );

describe('tables', () => {
  it('creates one table per topology table, with its keys', () => {
    const created = Object.values(resourcesOf(synth.template, 'AWS::DynamoDB::Table'));
    expect(created).toHaveLength(Object.keys(tables).length);
    for (const spec of Object.values(tables)) {
      const keys = [{ AttributeName: spec.partitionKey, KeyType: 'HASH' }, ...('sortKey' in spec ? [{ AttributeName: spec.sortKey, KeyType: 'RANGE' }] : [])];
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
      expect(table.Properties?.SSESpecification).toMatchObject({ SSEEnabled: true, SSEType: 'KMS', KMSMasterKeyId: expect.anything() as unknown });
    }
    expect(policyStatements(cmk.template).flatMap(actionsOf).filter((a) => a.includes('*'))).toEqual([]);
  });
});

describe('MSK cluster', () => {
  it('is an MSK Serverless cluster with IAM authentication in the private subnets', () => {
    synth.template.resourceCountIs('AWS::MSK::ServerlessCluster', 1);
    synth.template.hasResourceProperties('AWS::MSK::ServerlessCluster', {
      ClientAuthentication: { Sasl: { Iam: { Enabled: true } } },
      VpcConfigs: [{ SubnetIds: [Match.objectLike({ Ref: Match.anyValue() }), Match.objectLike({ Ref: Match.anyValue() })], SecurityGroups: [Match.anyValue()] }],
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

  it('lets the cluster security group in from itself (the trigger pollers) and from the functions on 9098 only', () => {
    const rules = Object.values(resourcesOf(synth.template, 'AWS::EC2::SecurityGroupIngress')).filter((r) => r.Properties?.FromPort === 9098);
    expect(rules).toHaveLength(2);
    for (const r of rules) expect(r.Properties).toMatchObject({ IpProtocol: 'tcp', FromPort: 9098, ToPort: 9098 });
  });
});

describe('network', () => {
  it('has private subnets without NAT, a DynamoDB gateway endpoint and Lambda and STS interface endpoints', () => {
    synth.template.resourceCountIs('AWS::EC2::NatGateway', 0);
    synth.template.resourceCountIs('AWS::EC2::InternetGateway', 0);
    synth.template.hasResourceProperties('AWS::EC2::VPCEndpoint', {
      VpcEndpointType: 'Gateway',
      ServiceName: Match.objectLike({ 'Fn::Join': Match.arrayWith([Match.arrayWith([Match.stringLikeRegexp('dynamodb')])]) }),
    });
    const interfaces = Object.values(resourcesOf(synth.template, 'AWS::EC2::VPCEndpoint')).filter((e) => e.Properties?.VpcEndpointType === 'Interface');
    expect(interfaces.map((e) => JSON.stringify(e.Properties?.ServiceName)).sort()).toEqual([expect.stringContaining('.lambda'), expect.stringContaining('.sts')]);
    for (const e of interfaces) expect(e.Properties?.PrivateDnsEnabled).toBe(true);
  });
});

describe('topics', () => {
  it('creates every topology topic with its partitions and retention through the topics custom resource', () => {
    const [resource] = Object.values(resourcesOf(synth.template, 'Custom::KafkaTopics'));
    const declared = JSON.parse(String(resource?.Properties?.Topics)) as { name: string; partitions: number; retention: unknown }[];
    expect(declared.map((t) => t.name).sort()).toEqual(Object.values(topics).map((t) => t.name).sort());
    for (const spec of Object.values(topics)) {
      const topic = declared.find((t) => t.name === spec.name);
      expect(topic?.partitions).toBe(spec.partitions);
      expect(retentionMs(topic?.retention as never)).toBe(retentionMs(spec.retention));
    }
    expect(resource?.Properties?.Brokers).toEqual({ 'Fn::GetAtt': [expect.any(String), 'BootstrapBrokerStringSaslIam'] });
  });

  it('lets the topic provider create and describe exactly the topology topics, and nothing more on Kafka', () => {
    const provider = Object.entries(resourcesOf(synth.template, 'AWS::Lambda::Function')).find(([id]) => id.startsWith('TopicsProviderFunction'));
    expect(provider).toBeDefined();
    const kafka = policyStatements(synth.template)
      .filter((s) => s.owner.startsWith('TopicsProviderFunction'))
      .flatMap(actionsOf)
      .filter((a) => a.startsWith('kafka'));
    expect(new Set(kafka)).toEqual(new Set(['kafka-cluster:Connect', 'kafka-cluster:DescribeTopic', 'kafka-cluster:CreateTopic']));
  });
});

describe('functions', () => {
  it('deploys one function per topology function, ARM64 on Node.js 22 with source maps', () => {
    const deployed = handlerFunctions();
    expect(deployed).toHaveLength(Object.keys(functions).length);
    for (const [, fn] of [...deployed, ...Object.entries(resourcesOf(synth.template, 'AWS::Lambda::Function')).filter(([id]) => id.startsWith('TopicsProviderFunction'))]) {
      expect(fn.Properties).toMatchObject({ Runtime: 'nodejs22.x', Architectures: ['arm64'], Handler: 'index.handler' });
      expect((fn.Properties?.Environment as { Variables: Record<string, unknown> }).Variables.NODE_OPTIONS).toBe('--enable-source-maps');
      expect(fn.Properties?.VpcConfig).toMatchObject({ SubnetIds: expect.any(Array) as unknown, SecurityGroupIds: expect.any(Array) as unknown });
    }
  });

  it('gives each function its timeout, memory, and the table, topic, Kafka and Powertools variables', () => {
    for (const [key, spec] of Object.entries(functions)) {
      synth.template.hasResourceProperties('AWS::Lambda::Function', {
        Description: Match.stringLikeRegexp(`^kafka-aggregates ${key}`),
        Timeout: spec.timeoutSeconds,
        MemorySize: spec.memoryMb,
        Environment: {
          Variables: Match.objectLike({
            [tableEnv.aggregates]: { Ref: Match.stringLikeRegexp('^TablesAggregates') },
            [tableEnv.readModels]: { Ref: Match.stringLikeRegexp('^TablesReadModels') },
            [topicEnv.commands]: topics.commands.name,
            [topicEnv.events]: topics.events.name,
            [topicEnv.results]: topics.results.name,
            [topicEnv.deadLetter]: topics.deadLetter.name,
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

describe('triggers', () => {
  const triggered = Object.values(functions as Record<string, FunctionSpec>).flatMap((spec) => (spec.trigger === undefined ? [] : [spec.trigger]));

  it('maps each trigger to its topic, batch size, window and consumer group, from the oldest record', () => {
    synth.template.resourceCountIs('AWS::Lambda::EventSourceMapping', triggered.length);
    for (const trigger of triggered) {
      synth.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [Match.stringLikeRegexp('^KafkaCluster'), 'Arn'] },
        Topics: [topics[trigger.topic].name],
        BatchSize: trigger.batchSize,
        MaximumBatchingWindowInSeconds: trigger.maxBatchingWindowSeconds,
        AmazonManagedKafkaEventSourceConfig: { ConsumerGroupId: trigger.consumerGroupId },
        StartingPosition: 'TRIM_HORIZON',
      });
    }
  });

  it('sends batches it gives up on to the dead-letter topic, after bounded retries with bisect and partial batch response', () => {
    for (const mapping of Object.values(resourcesOf(synth.template, 'AWS::Lambda::EventSourceMapping'))) {
      const source = Object.values(topics).find((t) => t.name === (mapping.Properties?.Topics as string[])[0]);
      expect(mapping.Properties).toMatchObject({
        DestinationConfig: { OnFailure: { Destination: `kafka://${topics.deadLetter.name}` } },
        MaximumRetryAttempts: 10,
        BisectBatchOnFunctionError: true,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ProvisionedPollerConfig: { MinimumPollers: 1, MaximumPollers: source?.partitions },
      });
    }
  });

  it('waits for the topics to exist before creating a mapping', () => {
    for (const mapping of Object.values(resourcesOf(synth.template, 'AWS::Lambda::EventSourceMapping'))) {
      expect([mapping.DependsOn ?? []].flat()).toContain(synth.stack.getLogicalId(synth.stack.topics.resource.node.defaultChild as CfnElement));
    }
  });
});

describe('IAM', () => {
  it('has no wildcard action in any policy', () => {
    const actions = policyStatements(synth.template).flatMap(actionsOf);
    expect(actions.length).toBeGreaterThan(0);
    expect(actions.filter((a) => a.includes('*'))).toEqual([]);
  });

  it('uses Resource "*" only for calls that take no resource ARN', () => {
    const allowedOnStar = new Set(['ec2:DescribeVpcs', 'ec2:DescribeSubnets', 'ec2:DescribeSecurityGroups']);
    const onStar = policyStatements(synth.template).filter((s) => s.Resource === '*' || (Array.isArray(s.Resource) && s.Resource.includes('*')));
    expect(onStar.flatMap(actionsOf).filter((a) => !allowedOnStar.has(a))).toEqual([]);
  });

  it('scopes Kafka data access to topic and group ARNs of the cluster', () => {
    const data = policyStatements(synth.template).filter((s) => actionsOf(s).some((a) => ['kafka-cluster:ReadData', 'kafka-cluster:WriteData', 'kafka-cluster:AlterGroup'].includes(a)));
    expect(data.length).toBeGreaterThan(0);
    for (const s of data) expect(JSON.stringify(s.Resource)).toMatch(/:(topic|group)\//);
  });
});

describe('monitoring', () => {
  it('alarms on errors of every function, offset lag of every trigger, and dead-letter arrivals', () => {
    const alarms = Object.values(resourcesOf(synth.template, 'AWS::CloudWatch::Alarm')).map((a) => a.Properties ?? {});
    const named = (metric: string) => alarms.filter((a) => a.MetricName === metric);
    expect(named('Errors')).toHaveLength(Object.keys(functions).length);
    expect(named('OffsetLag')).toHaveLength(Object.values(functions).filter((f) => 'trigger' in f).length);
    expect(named('MessagesInPerSec')).toEqual([
      expect.objectContaining({ Namespace: 'AWS/Kafka', Dimensions: expect.arrayContaining([{ Name: 'Topic', Value: topics.deadLetter.name }]) as unknown }) as unknown,
    ]);
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
