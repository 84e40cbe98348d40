/**
 * The network the functions and the MSK cluster live in: private subnets without NAT, a
 * DynamoDB gateway endpoint, and a Lambda interface endpoint for the one function that calls
 * the Lambda API (the rebuild disables and enables the commands trigger). The MSK triggers
 * need no endpoint: in provisioned mode Lambda makes the connections its pollers need.
 * Nothing here calls STS: the functions sign MSK IAM tokens with their role's credentials.
 */
import { RemovalPolicy, aws_ec2 as ec2 } from 'aws-cdk-lib';
import { Construct } from 'constructs';

/** Properties of {@link Network}. */
export interface NetworkProps {
  /**
   * Existing VPC to look up instead of creating one.
   * @default - a new VPC
   */
  readonly vpcId?: string;
  /**
   * Availability zones of a new VPC (MSK Serverless wants subnets in at least two).
   * @default 2
   */
  readonly maxAzs?: number;
  /**
   * Create the Lambda interface endpoint the functions' own Lambda API calls need without
   * NAT, and (for an existing VPC) the DynamoDB gateway endpoint; a new VPC always gets the
   * latter.
   * @default true
   */
  readonly interfaceEndpoints?: boolean;
}

/** A VPC, the private subnets to place functions in, and the functions' security group. */
export class Network extends Construct {
  /** The VPC. */
  readonly vpc: ec2.IVpc;
  /** Private subnets for the functions and the cluster. */
  readonly subnets: ec2.SubnetSelection;
  /** Security group of every function of the stack. */
  readonly functionSecurityGroup: ec2.SecurityGroup;
  /** The interface endpoints, by service. */
  readonly interfaceEndpoints: Readonly<Record<string, ec2.InterfaceVpcEndpoint>>;

  constructor(scope: Construct, id: string, props: NetworkProps = {}) {
    super(scope, id);
    if (props.vpcId !== undefined) {
      this.vpc = ec2.Vpc.fromLookup(this, 'Vpc', { vpcId: props.vpcId });
      // An existing VPC may have its endpoints already; `vpcEndpoints=false` leaves it as it is.
      if (props.interfaceEndpoints ?? true) this.vpc.addGatewayEndpoint('DynamoDb', { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB });
    } else {
      this.vpc = new ec2.Vpc(this, 'Vpc', {
        maxAzs: props.maxAzs ?? 2,
        natGateways: 0,
        subnetConfiguration: [{ name: 'private', subnetType: ec2.SubnetType.PRIVATE_ISOLATED, cidrMask: 22 }],
        gatewayEndpoints: { DynamoDb: { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB } },
        // Rejected traffic only: enough to debug security groups, cheap to keep.
        flowLogs: { rejected: { trafficType: ec2.FlowLogTrafficType.REJECT } },
      });
    }
    // An imported VPC may have private subnets with NAT; a new one has isolated subnets only.
    this.subnets =
      this.vpc.privateSubnets.length > 0
        ? { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS }
        : { subnetType: ec2.SubnetType.PRIVATE_ISOLATED };

    this.functionSecurityGroup = new ec2.SecurityGroup(this, 'FunctionSecurityGroup', {
      vpc: this.vpc,
      description: 'Functions of kafka-aggregates: out to MSK, DynamoDB and the VPC endpoints',
      allowAllOutbound: true,
    });

    const endpoints: Record<string, ec2.InterfaceVpcEndpoint> = {};
    if (props.interfaceEndpoints ?? true) {
      const services: Record<string, ec2.InterfaceVpcEndpointAwsService> = { Lambda: ec2.InterfaceVpcEndpointAwsService.LAMBDA };
      for (const [name, service] of Object.entries(services)) {
        // Closed by default: only the security groups given to allowEndpointsFrom get in.
        endpoints[name] = this.vpc.addInterfaceEndpoint(name, { service, subnets: this.subnets, privateDnsEnabled: true, open: false });
      }
    }
    this.interfaceEndpoints = endpoints;
    this.allowEndpointsFrom(this.functionSecurityGroup);
  }

  /** Lets `peer` reach the interface endpoints on HTTPS. */
  allowEndpointsFrom(peer: ec2.IConnectable): void {
    for (const endpoint of Object.values(this.interfaceEndpoints)) endpoint.connections.allowDefaultPortFrom(peer, 'HTTPS to the endpoint');
  }

  /**
   * Keeps the VPC and its subnets when the stack is deleted: a retained MSK cluster keeps its
   * network interfaces in them, so deleting them would fail the stack's deletion. Only for a
   * VPC this stack created.
   */
  retainForCluster(): void {
    for (const child of this.vpc.node.findAll()) {
      if (child instanceof ec2.CfnVPC || child instanceof ec2.CfnSubnet) child.applyRemovalPolicy(RemovalPolicy.RETAIN);
    }
  }
}
