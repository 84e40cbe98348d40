/**
 * What an operator of a deployed stack relies on (issue 25): a stalled trigger raises an alarm
 * that reaches someone, stacks sharing a cluster stay apart, the deployment traps are gone,
 * and the partition count is chosen at creation. Template assertions on the synthesized stack.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { EDITABLE_TOPIC_CONFIGS } from '../../functions/adapters/kafka/topics.ts';
import { topicConfig, topics } from '../../functions/topology.ts';
import { PROJECT_ROOT } from '../../infra/node-function.ts';
import { EXISTING, actionsOf, policyStatements, resourcesOf, synthesize, synthesizeExistingCluster, type Synthesized } from './synth.ts';

let synth: Synthesized;
beforeAll(() => {
  synth = synthesize({ skipBundling: true });
}, 180_000);

const outputs = (s: Synthesized) => (s.template.toJSON() as { Outputs: Record<string, unknown> }).Outputs;
const alarms = (s: Synthesized) => resourcesOf(s.template, 'AWS::CloudWatch::Alarm');
const alarm = (s: Synthesized, idPrefix: string) => {
  const found = Object.entries(alarms(s)).find(([id]) => id.startsWith(`Monitoring${idPrefix}`));
  if (found === undefined) throw new Error(`no alarm ${idPrefix}`);
  return found[1].Properties ?? {};
};
const mappingRef = (s: Synthesized, key: string) => {
  const mapping = s.stack.handlers.triggers[key];
  if (mapping === undefined) throw new Error(`no trigger ${key}`);
  return { Ref: s.stack.getLogicalId(mapping.node.defaultChild as never) };
};
/** The metrics of an alarm on a metric expression, by id. */
const expressionMetrics = (props: Record<string, unknown>) =>
  Object.fromEntries(
    (props.Metrics as { Id: string; MetricStat?: { Metric: { MetricName: string; Dimensions: unknown[] } } }[])
      .filter((m) => m.MetricStat !== undefined)
      .map((m) => [m.Id, m.MetricStat?.Metric]),
  );

describe('stalls seen', () => {
  it('has both triggers publish event counts, errors and Kafka metrics (MetricsConfig)', () => {
    const mappings = Object.values(resourcesOf(synth.template, 'AWS::Lambda::EventSourceMapping'));
    expect(mappings).toHaveLength(2);
    for (const m of mappings) expect(m.Properties?.MetricsConfig).toEqual({ Metrics: ['EventCount', 'ErrorCount', 'KafkaMetrics'] });
  });

  it("alarms on each trigger's polling, invoke and commit errors, by its mapping", () => {
    for (const key of ['commandHandler', 'eventHandler']) {
      const props = alarm(synth, `${key.charAt(0).toUpperCase()}${key.slice(1)}TriggerErrors`);
      const metrics = Object.values(expressionMetrics(props));
      expect(metrics.map((m) => m?.MetricName).sort()).toEqual(['CommitErrorCount', 'InvokeErrorCount', 'PollingErrorCount']);
      for (const m of metrics) expect(m?.Dimensions).toEqual([{ Name: 'EventSourceMappingUUID', Value: mappingRef(synth, key) }]);
      expect(props).toMatchObject({ Threshold: 0, ComparisonOperator: 'GreaterThanThreshold' });
    }
  });

  it('treats missing offset lag as breaching: a trigger that reports no lag has no pollers running', () => {
    for (const key of ['CommandHandler', 'EventHandler']) {
      expect(alarm(synth, `${key}OffsetLag`)).toMatchObject({
        MetricName: 'OffsetLag',
        TreatMissingData: 'breaching',
        EvaluationPeriods: 5,
      });
    }
  });

  it('alarms on a trigger that publishes no event counts for 15 minutes (disabled, or pollers down), and on one that polls nothing while records wait', () => {
    for (const key of ['commandHandler', 'eventHandler']) {
      const pascal = `${key.charAt(0).toUpperCase()}${key.slice(1)}`;
      expect(alarm(synth, `${pascal}TriggerNotPolling`)).toMatchObject({
        MetricName: 'PolledEventCount',
        Namespace: 'AWS/Lambda',
        Dimensions: [{ Name: 'EventSourceMappingUUID', Value: mappingRef(synth, key) }],
        Period: 300,
        EvaluationPeriods: 3,
        TreatMissingData: 'breaching',
        ComparisonOperator: 'LessThanThreshold',
        Threshold: 0,
      });
      const stalled = alarm(synth, `${pascal}TriggerStalled`);
      expect(Object.values(expressionMetrics(stalled)).map((m) => m?.MetricName)).toEqual(['OffsetLag', 'PolledEventCount']);
      expect(JSON.stringify(stalled.Metrics)).toContain('IF(FILL(lag, 0) > 0 AND FILL(polled, 0) == 0, 1, 0)');
    }
  });

  it("alarms on each side's lag in time: the age of the oldest record its handler gets, by trigger", () => {
    for (const key of ['commandHandler', 'eventHandler']) {
      expect(alarm(synth, `${key.charAt(0).toUpperCase()}${key.slice(1)}RecordAge`)).toMatchObject({
        Namespace: 'KafkaAggregates',
        MetricName: 'oldestRecordAgeMs',
        Dimensions: [
          { Name: 'service', Value: 'kafka-aggregates' },
          { Name: 'trigger', Value: key },
        ],
        Statistic: 'Maximum',
        Period: 60,
        EvaluationPeriods: 5,
        Threshold: 300_000,
        ComparisonOperator: 'GreaterThanThreshold',
        TreatMissingData: 'notBreaching',
      });
    }
    // The handlers publish it under that dimension and those keys.
    const powertools = readFileSync(join(PROJECT_ROOT, 'functions/adapters/aws/powertools.ts'), 'utf8');
    expect(powertools).toContain("addDimension('trigger', trigger)");
    for (const [file, key] of [
      ['commands.ts', 'commandHandler'],
      ['events.ts', 'eventHandler'],
    ])
      expect(readFileSync(join(PROJECT_ROOT, 'functions/handlers', file ?? ''), 'utf8')).toContain(
        `addRecordAges(metrics, '${key}', event)`,
      );
    const tighter = synthesize({ skipBundling: true, context: { recordAgeThresholdSeconds: '60' } });
    expect(alarm(tighter, 'EventHandlerRecordAge')).toMatchObject({ Threshold: 60_000 });
  });

  it('alarms when the command side finds its table behind its log', () => {
    expect(alarm(synth, 'TableBehindLog')).toMatchObject({ MetricName: 'tableBehindLog', Namespace: 'KafkaAggregates', Threshold: 0 });
  });

  it('gives every alarm an action: a topic the stack creates when none is given, named in an output', () => {
    const topicsCreated = Object.keys(resourcesOf(synth.template, 'AWS::SNS::Topic'));
    expect(topicsCreated).toHaveLength(1);
    for (const a of Object.values(alarms(synth))) expect(a.Properties?.AlarmActions).toEqual([{ Ref: topicsCreated[0] }]);
    expect(outputs(synth).AlarmTopicArn).toMatchObject({ Value: { Ref: topicsCreated[0] } });
  });

  it('notifies the topic the context names instead, and creates none', () => {
    const arn = 'arn:aws:sns:eu-west-1:123456789012:ops';
    const given = synthesize({ skipBundling: true, context: { alarmTopicArn: arn } });
    given.template.resourceCountIs('AWS::SNS::Topic', 0);
    for (const a of Object.values(alarms(given))) expect(a.Properties?.AlarmActions).toEqual([arn]);
    expect(outputs(given).AlarmTopicArn).toMatchObject({ Value: arn });
  });

  it('has one dashboard with lag in records and time, trigger errors, halts, releases, rebuild progress, errors and throttles', () => {
    const dashboards = Object.values(resourcesOf(synth.template, 'AWS::CloudWatch::Dashboard'));
    expect(dashboards).toHaveLength(1);
    const body = JSON.stringify(synth.stack.resolve(dashboards[0]?.Properties?.DashboardBody));
    for (const title of [
      'lag in records',
      'lag in time',
      'trigger records and errors',
      'halts and blocked partitions',
      'releases and dead letters',
      'rebuild progress',
      'invocations, errors, throttles',
      'capacity and throttling',
    ])
      expect(body).toContain(title);
    for (const metric of ['OffsetLag', 'SumOffsetLag', 'PolledEventCount', 'PollingErrorCount', 'Throttles', 'EventSourceMappingUUID'])
      expect(body).toContain(metric);
  });

  it('charts and alarms only on metrics the handlers publish (functions/handlers/*.ts and their Powertools helper, addMetric)', () => {
    // The handlers, the Powertools helper through which they publish the records' ages, and the
    // errors whose alarm metric the command handler publishes (core/errors.ts `alarm`).
    const handlers = [
      ...readdirSync(join(PROJECT_ROOT, 'functions/handlers')).map((f) => join('functions/handlers', f)),
      'functions/adapters/aws/powertools.ts',
      'functions/control/control.ts',
    ]
      .map((f) => readFileSync(join(PROJECT_ROOT, f), 'utf8'))
      .join('\n');
    // The dashboard body is JSON inside the template's JSON: its metrics are ["<namespace>","<name>",…].
    const body = JSON.stringify(
      synth.stack.resolve(Object.values(resourcesOf(synth.template, 'AWS::CloudWatch::Dashboard'))[0]?.Properties?.DashboardBody),
    );
    const own = [...body.matchAll(/\\"KafkaAggregates\\",\\"(\w+)\\"/g)];
    const alarmed = Object.values(alarms(synth))
      .filter((a) => a.Properties?.Namespace === 'KafkaAggregates')
      .map((a) => String(a.Properties?.MetricName));
    const names = new Set([...own.map((m) => m[1] ?? ''), ...alarmed]);
    expect(names.size).toBeGreaterThan(8);
    for (const name of names) {
      const emitted = /^status\dxx$/.test(name) ? handlers.includes('`status${') : handlers.includes(`'${name}'`);
      expect(emitted, name).toBe(true);
    }
  });
});

describe('shared clusters', () => {
  let first: Synthesized;
  let second: Synthesized;
  beforeAll(() => {
    first = synthesizeExistingCluster({ stackName: 'OrdersA' });
    second = synthesizeExistingCluster({ stackName: 'OrdersB' });
  }, 180_000);

  const kafkaResources = (s: Synthesized) =>
    policyStatements(s.template)
      .filter((st) => actionsOf(st).some((a) => a.startsWith('kafka-cluster:')))
      .flatMap((st) => [st.Resource].flat())
      .map((r) => JSON.stringify(r))
      .filter((r) => /:(topic|group)\//.test(r));
  const names = (s: Synthesized) => [
    ...Object.values(s.stack.topics.names),
    ...Object.values(s.stack.handlers.groups).flatMap((g) => [g.own, ...(g.trigger === undefined ? [] : [g.trigger])]),
  ];

  it('names every topic and consumer group under the stack name, so two stacks on one cluster share none', () => {
    expect(names(first).every((n) => n.startsWith('OrdersA.'))).toBe(true);
    expect(names(second).every((n) => n.startsWith('OrdersB.'))).toBe(true);
    expect(names(first).filter((n) => names(second).includes(n))).toEqual([]);
    const mapping = (s: Synthesized) =>
      Object.values(resourcesOf(s.template, 'AWS::Lambda::EventSourceMapping')).map((m) => [
        m.Properties?.Topics,
        m.Properties?.AmazonManagedKafkaEventSourceConfig,
      ]);
    expect(JSON.stringify(mapping(first))).not.toContain('OrdersB');
    expect(JSON.stringify(mapping(second))).not.toContain('OrdersA');
  });

  it("scopes every Kafka topic and group grant to the stack's own names", () => {
    for (const [s, own, other] of [
      [first, 'OrdersA.', 'OrdersB.'],
      [second, 'OrdersB.', 'OrdersA.'],
    ] as const) {
      const resources = kafkaResources(s);
      expect(resources.length).toBeGreaterThan(10);
      for (const r of resources) {
        expect(r).toMatch(new RegExp(`:(topic|group)/existing/[^/"]+/${own.replace('.', '\\.')}`));
        expect(r).not.toContain(other);
      }
    }
  });

  it('takes the prefix from the context when given', () => {
    const named = synthesize({ skipBundling: true, context: { topicPrefix: 'orders-prod' } });
    expect(named.stack.topics.names.commands).toBe('orders-prod.commands');
    expect(named.stack.handlers.groups.eventHandler?.trigger).toBe('orders-prod.kafka-aggregates-event-handler');
  });

  it("lets the existing cluster's security group reach itself on the broker port, accepting a rule that exists, never removing it", () => {
    const [ingress] = Object.entries(resourcesOf(first.template, 'Custom::AWS')).filter(([id]) => id.startsWith('KafkaPollerIngress'));
    expect(ingress).toBeDefined();
    const create = JSON.parse(String(ingress?.[1].Properties?.Create)) as Record<string, unknown>;
    expect(create).toMatchObject({
      service: 'EC2',
      action: 'authorizeSecurityGroupIngress',
      parameters: {
        GroupId: EXISTING.securityGroupId,
        IpPermissions: [{ IpProtocol: 'tcp', FromPort: 9098, ToPort: 9098, UserIdGroupPairs: [{ GroupId: EXISTING.securityGroupId }] }],
      },
      ignoreErrorCodesMatching: 'InvalidPermission\\.Duplicate',
    });
    expect(ingress?.[1].Properties?.Delete).toBeUndefined();
    const grant = policyStatements(first.template).filter((st) => actionsOf(st).includes('ec2:AuthorizeSecurityGroupIngress'));
    expect(grant).toHaveLength(1);
    expect(JSON.stringify(grant[0]?.Resource)).toContain(`:security-group/${EXISTING.securityGroupId}`);
  });
});

describe('deploy traps', () => {
  it('gives every function of the stack, the custom-resource providers included, a log group with a retention, in every mode', () => {
    const modes: [string, Synthesized][] = [
      ['default', synth],
      ['existing cluster', synthesizeExistingCluster()],
      ['LocalStack', synthesize({ skipBundling: true, context: { target: 'localstack' } })],
    ];
    for (const [mode, s] of modes) {
      const groups = resourcesOf(s.template, 'AWS::Logs::LogGroup');
      const functions = Object.entries(resourcesOf(s.template, 'AWS::Lambda::Function'));
      expect(functions.length, mode).toBeGreaterThan(5);
      for (const [id, fn] of functions) {
        const ref = (fn.Properties?.LoggingConfig as { LogGroup?: { Ref: string } } | undefined)?.LogGroup?.Ref;
        const named = Object.values(groups).find((g) => JSON.stringify(g.Properties?.LogGroupName ?? '').includes(`{"Ref":"${id}"}`));
        const group = ref === undefined ? named : groups[ref];
        expect(group?.Properties?.RetentionInDays, `${mode}: ${id}`).toBeGreaterThan(0);
      }
    }
  }, 120_000);

  it('refuses a reserved concurrency for a function the stack does not have, or that is not a count', () => {
    expect(() => synthesize({ skipBundling: true, context: { reservedConcurrency: 'rebuild:1' } })).toThrow(
      /context reservedConcurrency: no function rebuild; the functions are commandHandler, /,
    );
    expect(() => synthesize({ skipBundling: true, context: { reservedConcurrency: 'snapshotRebuild:0' } })).toThrow(
      /expected function:count pairs/,
    );
  });

  it('declares on the topics only settings MSK Serverless lets the topics provider change after creation', () => {
    for (const spec of Object.values(topics))
      for (const name of Object.keys(topicConfig(spec))) expect(EDITABLE_TOPIC_CONFIGS.has(name)).toBe(true);
  });
});

describe('partitions chosen at creation', () => {
  it('creates the keyed topics with the partition count of the context, and lets the triggers poll with as many pollers', () => {
    const six = synthesize({ skipBundling: true, context: { partitions: 6 } });
    const [resource] = Object.values(resourcesOf(six.template, 'Custom::KafkaTopics'));
    const declared = JSON.parse(String(resource?.Properties?.Topics)) as { name: string; partitions: number }[];
    const count = (key: keyof typeof topics) => declared.find((t) => t.name === `KafkaAggregates.${topics[key].name}`)?.partitions;
    expect([count('commands'), count('events')]).toEqual([6, 6]);
    expect([count('results'), count('deadLetter')]).toEqual([topics.results.partitions, topics.deadLetter.partitions]);
    for (const m of Object.values(resourcesOf(six.template, 'AWS::Lambda::EventSourceMapping')))
      expect(m.Properties?.ProvisionedPollerConfig).toMatchObject({ MaximumPollers: 6 });
  });

  it('grows by a generation: -c partitions=3,6 keeps the first topics and adds <name>.g2 with 6 partitions, a trigger each', () => {
    const grown = synthesize({ skipBundling: true, context: { partitions: '3,6' } });
    const [resource] = Object.values(resourcesOf(grown.template, 'Custom::KafkaTopics'));
    const declared = JSON.parse(String(resource?.Properties?.Topics)) as { name: string; partitions: number }[];
    const count = (name: string) => declared.find((t) => t.name === `KafkaAggregates.${name}`)?.partitions;
    expect([count('commands'), count('commands.g2'), count('events'), count('events.g2')]).toEqual([3, 6, 3, 6]);
    expect(declared.some((t) => t.name.endsWith('results.g2'))).toBe(false);
    const mappings = Object.values(resourcesOf(grown.template, 'AWS::Lambda::EventSourceMapping')).map((m) => m.Properties ?? {});
    const of = (topic: string) => mappings.filter((m) => JSON.stringify(m.Topics) === JSON.stringify([`KafkaAggregates.${topic}`]));
    for (const [topic, pollers] of [
      ['commands', 3],
      ['commands.g2', 6],
      ['events', 3],
      ['events.g2', 6],
    ] as const) {
      expect(of(topic), topic).toHaveLength(1);
      expect(of(topic)[0]?.ProvisionedPollerConfig, topic).toMatchObject({ MaximumPollers: pollers });
    }
    // Each generation's trigger in a consumer group of its own; the first keeps the group it had.
    const groups = mappings.map((m) => (m.AmazonManagedKafkaEventSourceConfig as { ConsumerGroupId: string }).ConsumerGroupId).sort();
    expect(groups).toEqual(
      [
        'KafkaAggregates.kafka-aggregates-command-handler',
        'KafkaAggregates.kafka-aggregates-command-handler.g2',
        'KafkaAggregates.kafka-aggregates-event-handler',
        'KafkaAggregates.kafka-aggregates-event-handler.g2',
      ].sort(),
    );
    // Every function learns the generations; the rebuild holds both commands triggers.
    const lambdas = Object.values(resourcesOf(grown.template, 'AWS::Lambda::Function')).map(
      (f) => (f.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ?? {},
    );
    const ours = lambdas.filter((v) => v.KAFKA_CONSUMER_GROUP !== undefined);
    expect(ours.length).toBeGreaterThan(0);
    for (const v of ours) expect(v.PARTITION_GENERATIONS).toBe('3,6');
    const controlled = ours.find((v) => v.CONTROLLED_TRIGGER_UUID !== undefined)?.CONTROLLED_TRIGGER_UUID as {
      'Fn::Join': [string, unknown[]];
    };
    expect(controlled['Fn::Join'][1].filter((part) => typeof part !== 'string')).toHaveLength(2);
    // The rebuilds read where every generation's trigger stands: each .g2 group may be described.
    const statements = Object.values(resourcesOf(grown.template, 'AWS::IAM::Policy')).flatMap(
      (p) => (p.Properties?.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] }).Statement,
    );
    const described = JSON.stringify(statements.filter((s) => JSON.stringify(s.Action).includes('kafka-cluster:DescribeGroup')));
    for (const group of ['kafka-aggregates-command-handler.g2', 'kafka-aggregates-event-handler.g2'])
      expect(described).toContain(`KafkaAggregates.${group}`);
    // The command handler forwards what reaches a sealed generation to the newer ones: it writes those, not the first.
    const commandWrites = JSON.stringify(
      Object.entries(resourcesOf(grown.template, 'AWS::IAM::Policy'))
        .filter(([id]) => id.includes('CommandHandler'))
        .flatMap(([, p]) => (p.Properties?.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] }).Statement)
        .filter((s) => JSON.stringify(s.Action).includes('kafka-cluster:WriteData'))
        .map((s) => s.Resource),
    );
    expect(commandWrites).toContain('/KafkaAggregates.commands.g2"');
    expect(commandWrites).not.toContain('/KafkaAggregates.commands"');
    // Every generation's trigger has its own error and not-polling alarms; the newest keeps the names it had.
    for (const key of ['CommandHandler', 'EventHandler']) {
      const [older, newest] = [alarm(grown, `${key}TriggerNotPollingG1`), alarm(grown, `${key}TriggerNotPolling`)];
      expect(older.Dimensions).not.toEqual(newest.Dimensions);
      expect(
        Object.values(expressionMetrics(alarm(grown, `${key}TriggerErrorsG1`)))
          .map((m) => m?.MetricName)
          .sort(),
      ).toEqual(['CommitErrorCount', 'InvokeErrorCount', 'PollingErrorCount']);
    }
  });

  it('refuses generations that do not grow', () => {
    expect(() => synthesize({ skipBundling: true, context: { partitions: '6,3' } })).toThrow(/each generation needs more partitions/);
  });

  it('refuses a partition count that is not from 1 to 1000', () => {
    expect(() => synthesize({ skipBundling: true, context: { partitions: 0 } })).toThrow(/context partitions: expected a partition count/);
  });
});
