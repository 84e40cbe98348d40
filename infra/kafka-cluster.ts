/**
 * The Kafka cluster: a new MSK Serverless cluster, or an existing MSK cluster, both with IAM
 * authentication; or, with `auth: none`, plaintext (a new one is a provisioned cluster, for
 * LocalStack, which has no MSK Serverless). Gives the bootstrap brokers, the ARNs that MSK IAM
 * access control uses for topics and consumer groups, and least-privilege grants on them.
 *
 * A new cluster holds the log of record (the events topic): it is retained when the stack is
 * deleted and when a change would replace it (its properties are create-only), and so is
 * its security group, which its network interfaces keep using.
 */
import {
  Fn,
  RemovalPolicy,
  Stack,
  Token,
  aws_ec2 as ec2,
  aws_iam as iam,
  aws_logs as logs,
  aws_msk as msk,
  custom_resources as cr,
} from 'aws-cdk-lib';
import { Construct } from 'constructs';
import { plaintextCluster, selfIngress } from './kafka-cluster-resources.ts';

/** Properties of {@link KafkaCluster}. */
export interface KafkaClusterProps {
  /** VPC of the cluster and its clients. */
  readonly vpc: ec2.IVpc;
  /** Subnets of a new cluster. */
  readonly subnets: ec2.SubnetSelection;
  /** Security group of the clients (the functions), let in on the broker port. */
  readonly clientSecurityGroup: ec2.ISecurityGroup;
  /**
   * Existing cluster to use.
   * @default - a new MSK Serverless cluster
   */
  readonly existingClusterArn?: string;
  /**
   * How clients authenticate: `iam`, or `none` (plaintext; a new cluster is then a provisioned
   * one without authentication, which settings.ts allows only for LocalStack).
   * @default 'iam'
   */
  readonly auth?: 'iam' | 'none';
  /**
   * Security group of an existing cluster, to let the clients in; required with
   * `existingClusterArn`.
   * @default - none
   */
  readonly existingSecurityGroupId?: string;
  /**
   * Name of a new cluster.
   * @default - the stack name
   */
  readonly clusterName?: string;
}

/** Port of the brokers for each authentication (TLS for IAM). */
const BROKER_PORT = { iam: 9098, none: 9092 } as const;
/** Field of the GetBootstrapBrokers response for each authentication. */
const BROKER_FIELD = { iam: 'BootstrapBrokerStringSaslIam', none: 'BootstrapBrokerString' } as const;

/** An MSK cluster the stack talks to. */
export class KafkaCluster extends Construct {
  /** ARN of the cluster. */
  readonly clusterArn: string;
  /** Name of the cluster (the `Cluster Name` dimension of its CloudWatch metrics). */
  readonly clusterName: string;
  /** How clients authenticate. */
  readonly auth: 'iam' | 'none';
  /** Comma-separated bootstrap brokers for that authentication. */
  readonly bootstrapBrokers: string;
  /** Security group of the cluster; the trigger's pollers use it too. */
  readonly securityGroup: ec2.ISecurityGroup;
  /** The cluster this stack created, when it created one. */
  readonly serverlessCluster?: msk.CfnServerlessCluster;
  /** The custom resource that reads the bootstrap brokers. */
  readonly brokersLookup: cr.AwsCustomResource;
  /** The custom resource that lets an existing cluster's security group reach itself, when the cluster is not the stack's. */
  readonly pollerIngress?: cr.AwsCustomResource;

  constructor(scope: Construct, id: string, props: KafkaClusterProps) {
    super(scope, id);
    this.auth = props.auth ?? 'iam';
    const port = BROKER_PORT[this.auth];
    // The custom resources' one (singleton) function logs here; its default log group never expires.
    const customResourceLogs = new logs.LogGroup(this, 'CustomResourceLogs', {
      retention: logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });

    if (props.existingClusterArn === undefined) {
      const sg = new ec2.SecurityGroup(this, 'SecurityGroup', {
        vpc: props.vpc,
        description: 'MSK Serverless cluster of kafka-aggregates and its Lambda pollers',
        allowAllOutbound: true,
      });
      // The trigger's pollers connect from network interfaces that carry the cluster's own
      // security group, so the group must let itself in on the broker port.
      sg.addIngressRule(sg, ec2.Port.tcp(port), 'MSK trigger pollers');
      sg.addIngressRule(props.clientSecurityGroup, ec2.Port.tcp(port), 'Functions of kafka-aggregates');
      sg.applyRemovalPolicy(RemovalPolicy.RETAIN);
      this.securityGroup = sg;
      const clusterName =
        props.clusterName ??
        Stack.of(this)
          .stackName.replace(/[^a-zA-Z0-9-]/g, '-')
          .slice(0, 64);
      const subnetIds = props.vpc.selectSubnets(props.subnets).subnetIds;
      if (this.auth === 'none') {
        const cluster = plaintextCluster(this, clusterName, subnetIds, sg);
        this.clusterArn = cluster.attrArn;
        this.clusterName = cluster.clusterName;
      } else {
        const cluster = new msk.CfnServerlessCluster(this, 'Cluster', {
          clusterName,
          clientAuthentication: { sasl: { iam: { enabled: true } } },
          vpcConfigs: [{ subnetIds, securityGroups: [sg.securityGroupId] }],
        });
        // The log of record lives here: never delete it with the stack, nor on a replacement.
        cluster.applyRemovalPolicy(RemovalPolicy.RETAIN);
        this.serverlessCluster = cluster;
        this.clusterArn = cluster.attrArn;
        this.clusterName = cluster.clusterName;
      }
    } else {
      this.clusterArn = props.existingClusterArn;
      this.clusterName = props.existingClusterArn.split(':cluster/')[1]?.split('/')[0] ?? '';
      if (this.clusterName === '') throw new Error(`KafkaCluster: not an MSK cluster ARN: ${props.existingClusterArn}`);
      if (props.existingSecurityGroupId === undefined) throw new Error('KafkaCluster: an existing cluster needs existingSecurityGroupId');
      const sg = ec2.SecurityGroup.fromSecurityGroupId(this, 'SecurityGroup', props.existingSecurityGroupId, { mutable: true });
      sg.addIngressRule(props.clientSecurityGroup, ec2.Port.tcp(port), 'Functions of kafka-aggregates');
      this.securityGroup = sg;
      this.pollerIngress = selfIngress(this, props.existingSecurityGroupId, port, customResourceLogs);
    }

    this.brokersLookup = new cr.AwsCustomResource(this, 'BootstrapBrokers', {
      onUpdate: {
        service: 'Kafka',
        action: 'getBootstrapBrokers',
        parameters: { ClusterArn: this.clusterArn },
        physicalResourceId: cr.PhysicalResourceId.of(this.clusterArn),
        outputPaths: [BROKER_FIELD[this.auth]],
      },
      policy: cr.AwsCustomResourcePolicy.fromSdkCalls({ resources: [this.clusterArn] }),
      installLatestAwsSdk: false,
      logGroup: customResourceLogs,
    });
    this.bootstrapBrokers = this.brokersLookup.getResponseField(BROKER_FIELD[this.auth]);
  }

  /** ARN of a topic of this cluster, as MSK IAM access control names it. */
  topicArn(topic: string): string {
    return this.resourceArn('topic', topic);
  }

  /** ARN of a consumer group of this cluster. */
  groupArn(groupId: string): string {
    return this.resourceArn('group', groupId);
  }

  /** Lets `grantee` connect with IAM. */
  grantConnect(grantee: iam.IGrantable): void {
    this.grantData(grantee, ['kafka-cluster:Connect'], [this.clusterArn]);
  }

  /** Lets `grantee` produce to `topics` with an idempotent producer. */
  grantWrite(grantee: iam.IGrantable, topics: readonly string[]): void {
    if (topics.length === 0) return;
    this.grantConnect(grantee);
    this.grantData(grantee, ['kafka-cluster:WriteDataIdempotently'], [this.clusterArn]);
    this.grantData(
      grantee,
      ['kafka-cluster:DescribeTopic', 'kafka-cluster:WriteData'],
      topics.map((t) => this.topicArn(t)),
    );
  }

  /** Lets `grantee` consume `topics` in the consumer groups `groups`. */
  grantRead(grantee: iam.IGrantable, topics: readonly string[], groups: readonly string[]): void {
    if (topics.length === 0) return;
    this.grantConnect(grantee);
    this.grantData(
      grantee,
      ['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData'],
      topics.map((t) => this.topicArn(t)),
    );
    if (groups.length > 0) {
      this.grantData(
        grantee,
        ['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup'],
        groups.map((g) => this.groupArn(g)),
      );
    }
  }

  /** Lets `grantee` delete the consumer groups `groups` (patterns allowed): the throwaway groups of its reads. */
  grantDeleteGroups(grantee: iam.IGrantable, groups: readonly string[]): void {
    this.grantData(
      grantee,
      ['kafka-cluster:DeleteGroup'],
      groups.map((g) => this.groupArn(g)),
    );
  }

  /**
   * Lets `grantee` create `topics`, grow them, and read and alter their configs (the topic
   * provider, which brings existing topics in line with the topology).
   */
  grantManageTopics(grantee: iam.IGrantable, topics: readonly string[]): void {
    this.grantConnect(grantee);
    this.grantData(
      grantee,
      [
        'kafka-cluster:DescribeTopic',
        'kafka-cluster:CreateTopic',
        'kafka-cluster:AlterTopic',
        'kafka-cluster:DescribeTopicDynamicConfiguration',
        'kafka-cluster:AlterTopicDynamicConfiguration',
      ],
      topics.map((t) => this.topicArn(t)),
    );
  }

  /** Lets `grantee` read the committed offsets of `groups` on `topics` (and nothing else of them). */
  grantDescribeGroups(grantee: iam.IGrantable, topics: readonly string[], groups: readonly string[]): void {
    if (groups.length === 0) return;
    this.grantConnect(grantee);
    this.grantData(
      grantee,
      ['kafka-cluster:DescribeTopic'],
      topics.map((t) => this.topicArn(t)),
    );
    this.grantData(
      grantee,
      ['kafka-cluster:DescribeGroup'],
      groups.map((g) => this.groupArn(g)),
    );
  }

  /**
   * What an MSK trigger needs on the cluster itself, besides reading its topic in its group:
   * the cluster's description and brokers (control plane) and its dynamic configuration.
   */
  grantTrigger(grantee: iam.IGrantable): void {
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['kafka:DescribeClusterV2', 'kafka:GetBootstrapBrokers'],
      resourceArns: [this.clusterArn],
    });
    this.grantData(grantee, ['kafka-cluster:DescribeClusterDynamicConfiguration'], [this.clusterArn]);
  }

  private grantData(grantee: iam.IGrantable, actions: string[], resourceArns: string[]): void {
    iam.Grant.addToPrincipal({ grantee, actions, resourceArns });
  }

  /**
   * `arn:…:cluster/<name>/<uuid>` becomes `arn:…:<kind>/<name>/<uuid>/<resource>`, the form MSK
   * IAM access control gives topics and groups; also when the cluster ARN is a token.
   */
  private resourceArn(kind: 'topic' | 'group', name: string): string {
    if (!Token.isUnresolved(this.clusterArn)) return `${this.clusterArn.replace(':cluster/', `:${kind}/`)}/${name}`;
    const halves = Fn.split(':cluster/', this.clusterArn, 2);
    return Fn.join('', [Fn.select(0, halves), `:${kind}/`, Fn.select(1, halves), `/${name}`]);
  }
}
