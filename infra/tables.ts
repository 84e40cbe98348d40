/**
 * The topology's DynamoDB tables: on demand, point-in-time recovery, encrypted, deletion
 * protection and RETAIN. Both tables are stateful: the aggregates table holds the heads
 * commands are decided against, the read models what clients read.
 */
import { RemovalPolicy, aws_dynamodb as dynamodb, aws_iam as iam, aws_kms as kms } from 'aws-cdk-lib';
import { Construct } from 'constructs';
import type { TableKey, TableSpec } from '../functions/topology.ts';
import type { TableEncryptionMode } from './settings.ts';

/** Properties of {@link Tables}. */
export interface TablesProps {
  /** The topology's tables. */
  readonly tables: Readonly<Record<TableKey, TableSpec>>;
  /**
   * Encryption at rest.
   * @default 'aws-managed'
   */
  readonly encryption?: TableEncryptionMode;
}

/** A table per topology entry. */
export class Tables extends Construct {
  /** Each table by its topology key. */
  readonly tables: Readonly<Record<TableKey, dynamodb.Table>>;
  /** The key of customer-managed encryption. */
  readonly key?: kms.Key;

  constructor(scope: Construct, id: string, props: TablesProps) {
    super(scope, id);
    if (props.encryption === 'customer-managed') {
      this.key = new kms.Key(this, 'Key', {
        description: 'Encryption of the kafka-aggregates tables',
        enableKeyRotation: true,
        removalPolicy: RemovalPolicy.RETAIN,
        // The default key policy grants the account "kms:*"; this names what it allows instead.
        policy: new iam.PolicyDocument({
          statements: [
            new iam.PolicyStatement({
              sid: 'AccountAdministersAndDelegatesUse',
              principals: [new iam.AccountRootPrincipal()],
              actions: [...KEY_ADMIN_ACTIONS, ...KEY_USE_ACTIONS],
              resources: ['*'],
            }),
          ],
        }),
      });
    }
    const entries = Object.entries(props.tables).map(([key, spec]) => {
      const table = new dynamodb.Table(this, pascal(key), {
        partitionKey: { name: spec.partitionKey, type: dynamodb.AttributeType.STRING },
        ...(spec.sortKey !== undefined ? { sortKey: { name: spec.sortKey, type: dynamodb.AttributeType.STRING } } : {}),
        ...(spec.timeToLiveAttribute !== undefined ? { timeToLiveAttribute: spec.timeToLiveAttribute } : {}),
        billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
        pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
        ...(this.key !== undefined
          ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: this.key }
          : { encryption: dynamodb.TableEncryption.AWS_MANAGED }),
        deletionProtection: true,
        removalPolicy: RemovalPolicy.RETAIN,
      });
      return [key, table] as const;
    });
    this.tables = Object.fromEntries(entries) as Record<TableKey, dynamodb.Table>;
  }

  /**
   * Lets `grantee` call the item actions of `access` on the table `key`, and use its key when
   * customer-managed, with named actions only (the CDK's `grantReadWriteData` adds `kms:*`
   * wildcards and actions no function calls).
   */
  grantAccess(grantee: iam.IGrantable, key: TableKey, access: TableAccess): void {
    this.tables[key].grant(grantee, ...TABLE_ACTIONS[access]);
    this.key?.grant(grantee, ...KEY_USE_ACTIONS);
  }

  /** Lets `grantee` read items of the table `key` by key, and decrypt with its key when customer-managed. */
  grantRead(grantee: iam.IGrantable, key: TableKey): void {
    this.tables[key].grant(grantee, ...TABLE_READ_ACTIONS);
    this.key?.grant(grantee, 'kms:Decrypt', 'kms:DescribeKey');
  }
}

/** DynamoDB reads of items by key: no scans, no queries, no streams, no table management. */
export const TABLE_READ_ACTIONS = ['dynamodb:BatchGetItem', 'dynamodb:GetItem'] as const;

/** How much of a table a function may use (the topology's `tableAccess`). */
export type TableAccess = 'items' | 'batches' | 'maintenance';

const ITEMS = ['dynamodb:BatchGetItem', 'dynamodb:GetItem', 'dynamodb:PutItem'] as const;
// The command side and the rebuild describe the aggregates table (its identity: a restored table is another)
// and update the partitions' checkpoint items (their releases share the item).
const BATCHES = [...ITEMS, 'dynamodb:BatchWriteItem', 'dynamodb:DescribeTable', 'dynamodb:UpdateItem'] as const;

/**
 * The DynamoDB actions behind each access level: exactly the requests the adapters send
 * (functions/adapters/*-table.ts, release-list.ts, dynamodb.ts; a unit test keeps the two in
 * step). `items`: consistent batched reads, single reads, conditional puts. `batches`: also
 * batched writes, updates and the table's description. `maintenance`: also the scans, queries and deletes of rebuilds.
 */
export const TABLE_ACTIONS: Readonly<Record<TableAccess, readonly string[]>> = {
  items: ITEMS,
  batches: BATCHES,
  maintenance: [...BATCHES, 'dynamodb:Query', 'dynamodb:Scan', 'dynamodb:DeleteItem'],
};

/** What a principal needs of the table key to read and write an encrypted table. */
const KEY_USE_ACTIONS = [
  'kms:Decrypt',
  'kms:DescribeKey',
  'kms:Encrypt',
  'kms:GenerateDataKey',
  'kms:GenerateDataKeyWithoutPlaintext',
  'kms:ReEncryptFrom',
  'kms:ReEncryptTo',
];

/** Key administration, for the account (and the IAM policies it writes). */
const KEY_ADMIN_ACTIONS = [
  'kms:CancelKeyDeletion',
  'kms:CreateAlias',
  'kms:CreateGrant',
  'kms:DeleteAlias',
  'kms:DisableKey',
  'kms:DisableKeyRotation',
  'kms:EnableKey',
  'kms:EnableKeyRotation',
  'kms:GetKeyPolicy',
  'kms:GetKeyRotationStatus',
  'kms:ListAliases',
  'kms:ListGrants',
  'kms:ListKeyPolicies',
  'kms:ListResourceTags',
  'kms:PutKeyPolicy',
  'kms:RetireGrant',
  'kms:RevokeGrant',
  'kms:ScheduleKeyDeletion',
  'kms:TagResource',
  'kms:UntagResource',
  'kms:UpdateAlias',
  'kms:UpdateKeyDescription',
];

/** `readModels` → `ReadModels`, for construct ids. */
export const pascal = (key: string): string => key.charAt(0).toUpperCase() + key.slice(1);
