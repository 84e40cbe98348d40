/**
 * Which function each topic triggers, as the local runtime runs it: the topology's trigger
 * specs (functions/topology.ts) resolved to the topic names and group ids of this environment.
 * Every function with a `trigger` is picked up, so new functions need no change here.
 */
import { partitionGenerations, topicName } from '../../functions/config.ts';
import { generationName } from '../../functions/core/generations.ts';
import { functions as topologyFunctions, type FunctionSpec } from '../../functions/topology.ts';

/** One event source mapping as the emulated trigger runs it. */
export interface TriggerMapping {
  /** Key of the function in the topology; also the Lambda function name locally. */
  readonly functionName: string;
  /** Handler module, relative to the project root or absolute; must export `handler`. */
  readonly entry: string;
  /** Topic name in this environment. */
  readonly topic: string;
  /** Most records per invocation. */
  readonly batchSize: number;
  /** How long records are gathered before an invocation that is not full. */
  readonly maxBatchingWindowSeconds: number;
  /** Kafka consumer group id of the mapping. */
  readonly consumerGroupId: string;
  /** The invocation fails when the handler has not settled by then. */
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  /** Most containers of the function at once (Lambda's reserved concurrency). @default unreserved: one per partition in flight */
  readonly reservedConcurrency?: number;
}

/** Options of `mappingsFromTopology`. */
export interface MappingOptions {
  /** Functions to read. @default the topology's `functions` */
  readonly functions?: Readonly<Record<string, FunctionSpec>>;
  /** Only these functions. @default every function with a trigger */
  readonly only?: readonly string[];
  /** Prepended to every consumer group id (tests, a second local system). @default '' */
  readonly groupIdPrefix?: string;
  /** Consumer group id per function, replacing the topology's. @default none */
  readonly groupIds?: Readonly<Record<string, string>>;
}

/** Every triggered function of the topology, with topic names and group ids of this environment. */
export const mappingsFromTopology = (options: MappingOptions = {}): TriggerMapping[] => {
  const specs: Readonly<Record<string, FunctionSpec>> = options.functions ?? topologyFunctions;
  const unknown = (options.only ?? []).filter((name) => specs[name] === undefined);
  if (unknown.length > 0) throw new Error(`unknown function(s) ${unknown.join(', ')}; the topology has ${Object.keys(specs).join(', ')}`);
  return Object.entries(specs).flatMap(([functionName, spec]): TriggerMapping[] => {
    const trigger = spec.trigger;
    if (trigger === undefined || (options.only !== undefined && !options.only.includes(functionName))) return [];
    return [
      {
        functionName,
        entry: spec.entry,
        topic: topicName(trigger.topic),
        batchSize: trigger.batchSize,
        maxBatchingWindowSeconds: trigger.maxBatchingWindowSeconds,
        consumerGroupId: options.groupIds?.[functionName] ?? `${options.groupIdPrefix ?? ''}${trigger.consumerGroupId}`,
        timeoutSeconds: spec.timeoutSeconds,
        memoryMb: spec.memoryMb,
        ...(spec.reservedConcurrency === undefined ? {} : { reservedConcurrency: spec.reservedConcurrency }),
      },
    ];
  });
};

/**
 * The mappings of generation `index` of the keyed topics (core/generations.ts): one per
 * mapping of a keyed topic's first generation, on that generation's topic, in a consumer
 * group of its own; as the stack adds an event source mapping per generation.
 */
export const generationMappings = (mappings: readonly TriggerMapping[], index: number): TriggerMapping[] => {
  const keyed = new Set([topicName('commands'), topicName('events')]);
  return mappings
    .filter((m) => keyed.has(m.topic))
    .map((m) => ({ ...m, topic: generationName(m.topic, index), consumerGroupId: generationName(m.consumerGroupId, index) }));
};

/** Every generation's mappings of this environment's generations (`PARTITION_GENERATIONS`). */
export const allGenerations = (mappings: readonly TriggerMapping[]): TriggerMapping[] => [
  ...mappings,
  ...partitionGenerations()
    .slice(1)
    .flatMap((_, i) => generationMappings(mappings, i + 1)),
];
