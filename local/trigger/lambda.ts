/**
 * What the emulated trigger needs of a Lambda function: its handler module, loaded through
 * the same dynamic import for every function (once per container, containers.ts), and a
 * context object like Lambda's.
 */
import type { Context } from 'aws-lambda';
import { randomUUID } from 'node:crypto';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { MskEvent } from '../../functions/core/trigger-event.ts';
import { projectRoot } from '../stack/paths.ts';
import { HandlerModuleError } from './errors.ts';
import type { TriggerMapping } from './mappings.ts';

/** A Lambda handler for Kafka events, async style (middy-wrapped or bare). */
export type KafkaHandler = (event: MskEvent, context: Context) => Promise<unknown>;

/** A loaded function module: its handler, and its `shutdown` when it exports one (to close clients). */
export interface FunctionModule<H = KafkaHandler> {
  readonly handler: H;
  readonly shutdown?: () => Promise<void>;
}

/**
 * Imports a function's entry (relative to the project root) and checks that it exports
 * `handler` (of the type `H` its caller invokes). With `container`, the entry is imported
 * under a query string of that container's (`?container=3`): a module instance of its own,
 * evaluated afresh, as a new Lambda container evaluates it.
 */
export const loadFunction = async <H = KafkaHandler>(entry: string, container?: number): Promise<FunctionModule<H>> => {
  const file = pathToFileURL(isAbsolute(entry) ? entry : resolve(projectRoot, entry));
  if (container !== undefined) file.search = `container=${container}`;
  const url = file.href;
  let module: Record<string, unknown>;
  try {
    module = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    throw new HandlerModuleError(entry, `could not load ${entry}: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    });
  }
  const { handler, shutdown } = module;
  if (typeof handler !== 'function') throw new HandlerModuleError(entry, `${entry} exports no \`handler\` function`);
  return {
    handler: handler as H,
    ...(typeof shutdown === 'function' ? { shutdown: shutdown as () => Promise<void> } : {}),
  };
};

const unsupported = (name: string) => (): never => {
  throw new Error(`context.${name} is not supported: return a promise from the handler`);
};

/** A context object as Lambda passes it, for one invocation that must end by `deadline` (ms). */
export const lambdaContext = (mapping: Pick<TriggerMapping, 'functionName' | 'memoryMb'>, region: string, deadline: number): Context => ({
  callbackWaitsForEmptyEventLoop: true,
  functionName: mapping.functionName,
  functionVersion: '$LATEST',
  invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${mapping.functionName}`,
  memoryLimitInMB: String(mapping.memoryMb),
  awsRequestId: randomUUID(),
  logGroupName: `/aws/lambda/${mapping.functionName}`,
  logStreamName: `local/${process.pid}`,
  getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
  done: unsupported('done'),
  fail: unsupported('fail'),
  succeed: unsupported('succeed'),
});
