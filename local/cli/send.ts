/** `kafka-aggregates send`: writes a command record and, with --wait, waits for its result. */
import { createKafka } from '../../functions/compose/operator.ts';
import { parseTraceparent, traceIdOf } from '../../functions/core/trace-context.ts';
import { checkCommand, type CommandEnvelope } from '../../functions/core/wire.ts';
import { CommandClient, newCommandId, ResultTimeoutError } from '../client/client.ts';
import { readStatus } from '../trigger/status.ts';
import { CliError, explain, parse, requireBroker, usageError, wholeNumber, type CliCommand } from './common.ts';

const help = `Usage: kafka-aggregates send <aggregateType> <aggregateId> <CommandType> [json] [options]

Writes a command record to the commands topic (key = aggregateId, per the wire contract)
with a new commandId. [json] is the command's data, a JSON object (default {}).

Options:
  --wait                    wait for the command's result on the results topic and print it
  --timeout <ms>            how long --wait waits (default 30000)
  --command-id <id>         use this commandId (re-sending one gets its original result)
  --expected-version <n>    reject with VersionMismatch unless the aggregate is at version n
  --traceparent <value>     continue this W3C trace (00-<trace id>-<span id>-<flags>); by
                            default the command starts a new one. Its events, result and the
                            commands reactions issue for them carry the trace id (header
                            traceparent), and the handlers log it
  -h, --help                show this help

Output: where the record landed and its trace id (stderr); with --wait the result record as JSON (stdout).
Exit codes: 0 sent or accepted, 1 rejected, 2 error or timeout.

Examples:
  kafka-aggregates send account acc-1 OpenAccount '{"owner":"Ada"}' --wait
  kafka-aggregates send account acc-1 Deposit '{"amount":50}' --wait --timeout 5000`;

const parseData = (text: string | undefined): Record<string, unknown> => {
  if (text === undefined) return {};
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw usageError(
      'send',
      `[json] is not valid JSON (${error instanceof Error ? error.message : String(error)}); quote it for the shell, e.g. '{"amount":50}'`,
    );
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw usageError('send', `[json] must be a JSON object, e.g. '{"amount":50}', not ${text}`);
  return data as Record<string, unknown>;
};

/** What to look at when no result came: the triggers npm start runs here, blocked maybe, or npm start not running. */
const whyNoResult = (): string => {
  const here = readStatus();
  return here !== undefined && (here.triggers ?? []).length > 0
    ? `npm start runs here (pid ${here.pid}): \`kafka-aggregates status\` says whether a partition is blocked, and why; the command stays in the topic and is handled once it goes on.`
    : 'Is the command handler running? Start it with `npm start`; the command stays in the topic and is handled once it runs.';
};

/** The `send` command. */
export const send: CliCommand = {
  name: 'send',
  summary: 'send a command; with --wait, print its result',
  help,
  async run(args) {
    const { values, positionals } = parse('send', args, {
      wait: { type: 'boolean' },
      timeout: { type: 'string' },
      'command-id': { type: 'string' },
      'expected-version': { type: 'string' },
      traceparent: { type: 'string' },
    });
    if (values.help === true) {
      console.log(help);
      return 0;
    }
    const [aggregateType, aggregateId, type, json, ...extra] = positionals;
    if (aggregateType === undefined || aggregateId === undefined || type === undefined)
      throw usageError('send', 'send needs <aggregateType> <aggregateId> <CommandType>');
    if (extra.length > 0) throw usageError('send', `unexpected arguments: ${extra.join(' ')} (quote the JSON data as one argument)`);
    const timeoutMs = wholeNumber('send', 'timeout', values.timeout) ?? 30_000;
    if (values.traceparent !== undefined && parseTraceparent(values.traceparent) === undefined)
      throw usageError('send', `--traceparent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>), not ${values.traceparent}`);
    const expectedVersion = wholeNumber('send', 'expected-version', values['expected-version']);
    const command: CommandEnvelope = {
      commandId: values['command-id'] ?? newCommandId(),
      aggregateType,
      aggregateId,
      type,
      data: parseData(json),
      ...(expectedVersion === undefined ? {} : { expectedVersion }),
    };
    // The commands topic's own checks (core/wire.ts): what it would reject is not sent.
    const checked = checkCommand(command);
    if ('rejected' in checked) throw usageError('send', `not a valid command (${checked.rejected.code}): ${checked.rejected.message}`);

    await requireBroker();
    const client = await CommandClient.connect(createKafka('kafka-aggregates-cli')).catch((error: unknown) => {
      throw explain(error);
    });
    try {
      const sent = await client.send(command, values.traceparent).catch((error: unknown) => {
        throw explain(error);
      });
      console.error(
        `sent ${command.type} ${command.commandId} to ${client.topics.commands}-${sent.partition}@${sent.offset} (trace ${traceIdOf(sent.traceparent) ?? '-'})`,
      );
      if (values.wait !== true) return 0;
      const received = await client.result(command.commandId, timeoutMs).catch((error: unknown) => {
        if (error instanceof ResultTimeoutError) throw new CliError(`${error.message}. ${whyNoResult()}`);
        throw error;
      });
      console.log(JSON.stringify(received.result));
      console.error(`${received.result.status} after ${received.receivedAt - sent.timestamp} ms`);
      return received.result.status === 'accepted' ? 0 : 1;
    } finally {
      await client.close();
    }
  },
};
