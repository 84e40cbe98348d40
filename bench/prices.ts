/**
 * List prices the cost benchmark turns units into dollars with (us-east-1, on-demand), and the
 * fixed monthly floor of the default stack (infra/: one MSK Serverless cluster, the topology's
 * topics, provisioned pollers on each trigger, the Lambda interface endpoint).
 */
import { functions, topics } from '../functions/topology.ts';

/**
 * DynamoDB on-demand, standard table class, us-east-1: $ per million request units. Source:
 * aws.amazon.com/dynamodb/pricing/on-demand (the price cut of 2024-11-01, stated by AWS's news
 * blog post on on-demand, updated 2025-01-31); checked 2026-12-01.
 */
export const DYNAMODB_PRICE = { writePerMillion: 0.625, readPerMillion: 0.125, checked: '2026-12-01' } as const;

/**
 * Hourly list prices of the floor, us-east-1, from the AWS pricing pages as last read (MSK
 * Serverless: cluster-hour and partition-hour; Lambda event poller unit of provisioned mode;
 * PrivateLink interface endpoint per AZ-hour). Not re-checked on 2026-12-01: no source was
 * found for them then; treat the floor as an estimate.
 */
export const FLOOR_PRICE = { clusterHour: 0.75, partitionHour: 0.0015, pollerHour: 0.185, endpointAzHour: 0.01 } as const;

const HOURS_PER_MONTH = 730;

/** One line of the floor: what, how many, $ per month. */
export interface FloorLine {
  readonly what: string;
  readonly count: number;
  readonly monthly: number;
}

/**
 * The default stack's fixed monthly cost, before any command: the cluster, every topic's
 * partitions, one provisioned poller minimum per trigger (an event poller unit each), and one
 * interface endpoint (Lambda) in `azs` availability zones.
 */
export const monthlyFloor = (azs = 2): FloorLine[] => {
  const partitions = Object.values(topics).reduce((n, t) => n + t.partitions, 0);
  const triggers = Object.values(functions).filter((f) => 'trigger' in f).length;
  return [
    { what: 'MSK Serverless cluster-hours', count: 1, monthly: FLOOR_PRICE.clusterHour * HOURS_PER_MONTH },
    { what: 'MSK Serverless partition-hours', count: partitions, monthly: partitions * FLOOR_PRICE.partitionHour * HOURS_PER_MONTH },
    { what: 'provisioned pollers (1 minimum per trigger)', count: triggers, monthly: triggers * FLOOR_PRICE.pollerHour * HOURS_PER_MONTH },
    { what: `interface endpoint (Lambda) in ${azs} AZs`, count: azs, monthly: azs * FLOOR_PRICE.endpointAzHour * HOURS_PER_MONTH },
  ];
};

/** $ per million commands for the given units per command. */
export const dollarsPerMillion = (readUnits: number, writeUnits: number): { read: number; write: number; total: number } => {
  const read = readUnits * DYNAMODB_PRICE.readPerMillion;
  const write = writeUnits * DYNAMODB_PRICE.writePerMillion;
  return { read, write, total: read + write };
};
