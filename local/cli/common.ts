/**
 * What every CLI command shares: its shape, argument parsing with `node:util` parseArgs,
 * and errors that say what to do next.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { dynamoEndpoint, kafkaBrokers } from '../../functions/config.ts';
import { portOpen } from '../stack/processes.ts';
import { KafkaAggregatesError } from '../../functions/core/errors.ts';
import { parseArgsMessage } from '../script-options.ts';

/** A subcommand of `kafka-aggregates`. */
export interface CliCommand {
  readonly name: string;
  /** One line for the command list. */
  readonly summary: string;
  /** Full help text, usage first. */
  readonly help: string;
  /** Runs with the arguments after the command name; resolves to the exit code. */
  run(args: readonly string[]): Promise<number>;
}

/** A failure the user can act on: the message says what happened and what to do next. */
export class CliError extends KafkaAggregatesError {
  static override readonly disposition = 'reject-record';
  override readonly name = 'CliError';
  constructor(
    message: string,
    /** 2 for errors (usage, unreachable services, timeouts). */
    readonly exitCode = 2,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** What to do when the broker does not answer. */
export const BROKER_HINT = 'start it with `npm start` or `kafka-aggregates stack up`, or set KAFKA_BROKERS';
/** What to do when the DynamoDB endpoint does not answer. */
export const DYNAMODB_HINT =
  'start it with `npm start` or `kafka-aggregates stack up`, or set AWS_ENDPOINT_URL_DYNAMODB (or AWS_ENDPOINT_URL)';
/** What to do when a topic or table is missing. */
export const PROVISION_HINT =
  'create the topology with `npm start` (or `npx tsx local/provision.ts`), or point the *_TOPIC / *_TABLE variables at existing ones';

type Options = NonNullable<ParseArgsConfig['options']>;

/**
 * An unknown option in `args`, named with the options `command` takes: parseArgs's own message
 * is about quoting a positional argument that starts with '-', which is rarely what was meant.
 */
const unknownOption = (command: string, args: readonly string[], options: Options): string | undefined => {
  const known = Object.entries(options).flatMap(([name, option]) => [
    `--${name}`,
    ...(option.short === undefined ? [] : [`-${option.short}`]),
  ]);
  const end = args.indexOf('--');
  const unknown = (end < 0 ? args : args.slice(0, end)).find((arg) => arg.startsWith('-') && !known.includes(arg.split('=')[0] ?? arg));
  return unknown === undefined ? undefined : `unknown option ${unknown}; ${command} takes ${known.join(', ')}`;
};

/** Parses a command's arguments strictly; `--help`/`-h` is always accepted. Bad usage is a CliError naming the help. */
export const parse = <O extends Options>(command: string, args: readonly string[], options: O) => {
  const accepted = { ...options, help: { type: 'boolean', short: 'h' } } as const;
  try {
    return parseArgs({ args: [...args], options: accepted, allowPositionals: true, strict: true });
  } catch (error) {
    const unknown =
      (error as { code?: unknown }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? unknownOption(command, args, accepted) : undefined;
    throw usageError(command, unknown ?? parseArgsMessage(error, args));
  }
};

/**
 * Parses the arguments of a command that takes options only: their values, or undefined when
 * `--help` asked for its help (printed here). Any positional argument is a usage error.
 */
export const parseOptions = <O extends Options>(command: string, help: string, args: readonly string[], options: O) => {
  const { values, positionals } = parse(command, args, options);
  if ((values as { help?: boolean }).help === true) {
    console.log(help);
    return undefined;
  }
  if (positionals.length > 0) throw usageError(command, `${command} takes no arguments, got ${positionals.join(' ')}`);
  return values;
};

/** A `--name` option that must be a whole number ≥ 0; undefined when not given. */
export const wholeNumber = (command: string, name: string, text: string | undefined): number | undefined => {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0) throw usageError(command, `--${name} must be a whole number, not ${text}`);
  return n;
};

/** A usage error for `command`. */
export const usageError = (command: string, message: string): CliError =>
  new CliError(`${message}\nSee \`kafka-aggregates ${command} --help\`.`);

const hostPort = (address: string): { host: string; port: number } => {
  const at = address.lastIndexOf(':');
  return { host: address.slice(0, at).replace(/^\[|\]$/g, '') || '127.0.0.1', port: Number(address.slice(at + 1)) };
};

/**
 * Fails fast, with the next step, when no broker of KAFKA_BROKERS accepts a connection
 * (kafkajs would retry for half a minute first).
 */
export const requireBroker = async (): Promise<void> => {
  const brokers = kafkaBrokers();
  for (const broker of brokers) {
    const { host, port } = hostPort(broker);
    if (await portOpen(port, host, 2_000)) return;
  }
  throw new CliError(`Cannot reach the Kafka broker at ${brokers.join(', ')}: ${BROKER_HINT}.`);
};

/** A DynamoDB call that got no HTTP answer at all (endpoint down or unknown) becomes a CliError with the next step. */
export const explainDynamo = (error: unknown): unknown => {
  const status = (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
  if (!(error instanceof Error) || status !== undefined || error.name === 'ResourceNotFoundException') return explain(error);
  return new CliError(
    `Cannot reach DynamoDB at ${dynamoEndpoint() ?? 'the AWS default endpoint'} (${error.message}): ${DYNAMODB_HINT}.`,
    2,
    { cause: error },
  );
};

/** Turns a failure of the broker or DynamoDB into a CliError with the next step; others pass through. */
export const explain = (error: unknown): unknown => {
  if (error instanceof CliError || !(error instanceof Error)) return error;
  const text = `${error.name} ${error.message} ${String((error as NodeJS.ErrnoException).code ?? '')}`;
  if (error.name === 'ResourceNotFoundException') return new CliError(`${error.message}: ${PROVISION_HINT}.`, 2, { cause: error });
  if (/UNKNOWN_TOPIC_OR_PARTITION|does not host this topic-partition|topic.*not.*exist/i.test(text))
    return new CliError(`${error.message}: ${PROVISION_HINT}.`, 2, { cause: error });
  // kafkajs gathers the broker's refusals (a topic it may not create, say) in one error: each is said, with its topic.
  if (error.name === 'KafkaJSAggregateError') {
    const each = ((error as { errors?: unknown[] }).errors ?? []).map((e) => {
      const { topic, message } = e as { topic?: unknown; message?: unknown };
      return `${typeof topic === 'string' ? `${topic}: ` : ''}${typeof message === 'string' ? message : String(e)}`;
    });
    return new CliError(`Kafka: ${error.message}: ${each.join('; ')}`, 2, { cause: error });
  }
  // A consumer's crash is a KafkaJSNonRetriableError whose cause is the connection's.
  const cause = error.cause instanceof Error ? error.cause.name : '';
  if (/KafkaJS(Connection|NumberOfRetriesExceeded|BrokerNotFound)/.test(`${error.name} ${cause}`))
    return new CliError(`Kafka: ${error.message}: ${BROKER_HINT}.`, 2, { cause: error });
  return error;
};
