/**
 * The Kafka cluster: a new MSK Serverless cluster with IAM authentication (or, for LocalStack,
 * which has no MSK Serverless, a plaintext provisioned cluster), or an existing MSK cluster
 * (IAM, SASL/SCRAM or plaintext). Gives the bootstrap brokers, the ARNs that MSK IAM access
 * control uses for topics and consumer groups, and least-privilege grants on them.
 */
import {
  Fn,
  Stack,
  Token,
  aws_ec2 as ec2,
  aws_iam as iam,
  aws_msk as msk,
  aws_secretsmanager as secretsmanager,
  custom_resources as cr,
} from 'aws-cdk-lib';
import { Construct } from 'constructs';
import type { MskAuth } from './settings.ts';

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
   * Authentication: of an existing cluster; for a new one, `iam` creates MSK Serverless and
   * `none` a plaintext, unauthenticated provisioned cluster (meant for LocalStack).
   * @default 'iam'
   */
  readonly auth?: MskAuth;
  /**
   * SCRAM credentials secret, when `auth` is `scram`.
   * @default - none
   */
  readonly scramSecretArn?: string;
  /**
   * Security group of an existing cluster, to let the clients in.
   * @default - none
   */
  readonly existingSecurityGroupId?: string;
  /**
   * Name of a new cluster.
   * @default - the stack name
   */
  readonly clusterName?: string;
}

/** Port of the brokers for each authentication (TLS, or plaintext for none). */
const BROKER_PORT: Record<MskAuth, number> = { iam: 9098, scram: 9096, none: 9092 };
/** Field of the GetBootstrapBrokers response for each authentication. */
const BROKER_FIELD: Record<MskAuth, string> = { iam: 'BootstrapBrokerStringSaslIam', scram: 'BootstrapBrokerStringSaslScram', none: 'BootstrapBrokerString' };

/** An MSK cluster the stack talks to. */
export class KafkaCluster extends Construct {
  /** ARN of the cluster. */
  readonly clusterArn: string;
  /** Name of the cluster (the `Cluster Name` dimension of its CloudWatch metrics). */
  readonly clusterName: string;
  /** How clients authenticate. */
  readonly auth: MskAuth;
  /** Comma-separated bootstrap brokers for that authentication. */
  readonly bootstrapBrokers: string;
  /** SCRAM credentials, when `auth` is `scram`. */
  readonly scramSecret?: secretsmanager.ISecret;
  /** Security group of the cluster, when known; the trigger's pollers use it too. */
  readonly securityGroup?: ec2.ISecurityGroup;
  /** The custom resource that reads the bootstrap brokers. */
  readonly brokersLookup: cr.AwsCustomResource;

  constructor(scope: Construct, id: string, props: KafkaClusterProps) {
    super(scope, id);
    this.auth = props.auth ?? 'iam';
    const port = BROKER_PORT[this.auth];

    if (props.existingClusterArn === undefined) {
      const sg = new ec2.SecurityGroup(this, 'SecurityGroup', {
        vpc: props.vpc,
        description: 'MSK Serverless cluster of kafka-aggregates and its Lambda pollers',
        allowAllOutbound: true,
      });
      // The trigger's pollers run with the cluster's own security group: it must let itself in.
      sg.addIngressRule(sg, ec2.Port.tcp(port), 'MSK trigger pollers');
      sg.addIngressRule(props.clientSecurityGroup, ec2.Port.tcp(port), 'Functions of kafka-aggregates');
      this.securityGroup = sg;
      const clusterName = props.clusterName ?? Stack.of(this).stackName.replace(/[^a-zA-Z0-9-]/g, '-').slice(0, 64);
      const subnetIds = props.vpc.selectSubnets(props.subnets).subnetIds;
      const cluster =
        this.auth === 'none'
          ? plaintextCluster(this, clusterName, subnetIds, sg)
          : new msk.CfnServerlessCluster(this, 'Cluster', {
              clusterName,
              clientAuthentication: { sasl: { iam: { enabled: true } } },
              vpcConfigs: [{ subnetIds, securityGroups: [sg.securityGroupId] }],
            });
      this.clusterArn = cluster.attrArn;
      this.clusterName = cluster.clusterName;
    } else {
      this.clusterArn = props.existingClusterArn;
      this.clusterName = props.existingClusterArn.split(':cluster/')[1]?.split('/')[0] ?? '';
      if (this.clusterName === '') throw new Error(`KafkaCluster: not an MSK cluster ARN: ${props.existingClusterArn}`);
      if (props.existingSecurityGroupId !== undefined) {
        const sg = ec2.SecurityGroup.fromSecurityGroupId(this, 'SecurityGroup', props.existingSecurityGroupId, { mutable: true });
        sg.addIngressRule(props.clientSecurityGroup, ec2.Port.tcp(port), 'Functions of kafka-aggregates');
        this.securityGroup = sg;
      }
    }
    if (this.auth === 'scram') {
      if (props.scramSecretArn === undefined) throw new Error('KafkaCluster: SCRAM authentication needs scramSecretArn');
      this.scramSecret = secretsmanager.Secret.fromSecretCompleteArn(this, 'ScramSecret', props.scramSecretArn);
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

  /** Lets `grantee` connect with IAM (nothing for SCRAM, whose access is the secret). */
  grantConnect(grantee: iam.IGrantable): void {
    this.grantData(grantee, ['kafka-cluster:Connect'], [this.clusterArn]);
  }

  /** Lets `grantee` produce to `topics` with an idempotent producer. */
  grantWrite(grantee: iam.IGrantable, topics: readonly string[]): void {
    if (topics.length === 0) return;
    this.grantConnect(grantee);
    this.grantData(grantee, ['kafka-cluster:WriteDataIdempotently'], [this.clusterArn]);
    this.grantData(grantee, ['kafka-cluster:DescribeTopic', 'kafka-cluster:WriteData'], topics.map((t) => this.topicArn(t)));
  }

  /** Lets `grantee` consume `topics` in the consumer groups `groups`. */
  grantRead(grantee: iam.IGrantable, topics: readonly string[], groups: readonly string[]): void {
    if (topics.length === 0) return;
    this.grantConnect(grantee);
    this.grantData(grantee, ['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData'], topics.map((t) => this.topicArn(t)));
    if (groups.length > 0) {
      this.grantData(grantee, ['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup'], groups.map((g) => this.groupArn(g)));
    }
  }

  /** Lets `grantee` list, describe and create `topics` (the topic provider). */
  grantCreateTopics(grantee: iam.IGrantable, topics: readonly string[]): void {
    this.grantConnect(grantee);
    this.grantData(grantee, ['kafka-cluster:DescribeTopic', 'kafka-cluster:CreateTopic'], topics.map((t) => this.topicArn(t)));
  }

  /**
   * What an MSK trigger needs on the cluster itself, besides reading its topic in its group:
   * cluster description and brokers (control plane), and, for SCRAM, the secret.
   */
  grantTrigger(grantee: iam.IGrantable): void {
    iam.Grant.addToPrincipal({
      grantee,
      actions: ['kafka:DescribeClusterV2', 'kafka:GetBootstrapBrokers'],
      resourceArns: [this.clusterArn],
    });
    this.grantData(grantee, ['kafka-cluster:DescribeClusterDynamicConfiguration'], [this.clusterArn]);
    this.scramSecret?.grantRead(grantee);
  }

  private grantData(grantee: iam.IGrantable, actions: string[], resourceArns: string[]): void {
    // kafka-cluster:* actions only exist with IAM access control.
    if (this.auth === 'iam') iam.Grant.addToPrincipal({ grantee, actions, resourceArns });
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

/**
 * A plaintext, unauthenticated provisioned cluster, one broker per subnet: what the stack
 * creates with `mskAuth: none`, which settings.ts allows only for LocalStack (its
 * CloudFormation has AWS::MSK::Cluster but no AWS::MSK::ServerlessCluster).
 */
const plaintextCluster = (scope: Construct, clusterName: string, subnetIds: string[], sg: ec2.ISecurityGroup): msk.CfnCluster =>
  new msk.CfnCluster(scope, 'Cluster', {
    clusterName,
    kafkaVersion: '3.9.x',
    numberOfBrokerNodes: subnetIds.length,
    brokerNodeGroupInfo: { clientSubnets: subnetIds, instanceType: 'kafka.t3.small', securityGroups: [sg.securityGroupId] },
    clientAuthentication: { unauthenticated: { enabled: true } },
    encryptionInfo: { encryptionInTransit: { clientBroker: 'PLAINTEXT', inCluster: true } },
  });
