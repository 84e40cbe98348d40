/**
 * `npm start`'s live view: one line per command outcome, from the commands and results
 * topics — command type, aggregate, outcome, version or rejection code, and the latency
 * from the command record's timestamp to the result's arrival.
 */
import type { Kafka } from 'kafkajs';
import type { ResultRecord } from '../../functions/core/wire.ts';
import { watchTopics, type WatchedRecord, type Watcher } from '../client/watch.ts';

interface SeenCommand {
  readonly type: string;
  readonly timestamp: number;
}

const parseJson = (record: WatchedRecord): unknown => {
  try {
    return JSON.parse(record.value?.toString('utf8') ?? 'null');
  } catch {
    return null;
  }
};

/** One line for a result, given its command when known. */
export const formatOutcome = (result: ResultRecord, command: SeenCommand | undefined, receivedAt: number): string => {
  const outcome = result.status === 'accepted' ? `accepted v${result.version}` : `rejected ${result.reason.code}`;
  const latency = command === undefined ? '' : `  ${receivedAt - command.timestamp} ms`;
  const aggregate = result.aggregateType === null ? '(undecodable command)' : `${result.aggregateType}/${result.aggregateId ?? '?'}`;
  return (
    `${new Date(receivedAt).toISOString().slice(11, 23)}  ${(command?.type ?? '?').padEnd(20)} ${aggregate.padEnd(28)} ${outcome}${latency}` +
    (result.status === 'rejected' ? `  (${result.reason.message})` : '')
  );
};

/** Watches both topics from their current ends and prints a line per result. */
export const startLiveView = async (
  kafka: Kafka,
  topics: { commands: string; results: string },
  print: (line: string) => void,
): Promise<Watcher> => {
  const commands = new Map<string, SeenCommand>();
  /** Results that arrived before their command was seen (different partitions, different fetches). */
  const early = new Map<string, { result: ResultRecord; receivedAt: number }>();
  const remember = (id: string, command: SeenCommand): void => {
    commands.set(id, command);
    if (commands.size > 10_000) commands.delete(commands.keys().next().value as string);
  };
  return watchTopics(
    kafka,
    [topics.commands, topics.results],
    (record) => {
      const value = parseJson(record) as Record<string, unknown> | null;
      if (value === null || typeof value !== 'object') return;
      if (record.topic === topics.commands) {
        const id = typeof value.commandId === 'string' ? value.commandId : undefined;
        if (id === undefined) return;
        const command = { type: String(value.type), timestamp: record.timestamp };
        remember(id, command);
        const waiting = early.get(id);
        if (waiting !== undefined) {
          early.delete(id);
          print(formatOutcome(waiting.result, command, waiting.receivedAt));
        }
        return;
      }
      const result = value as unknown as ResultRecord;
      const id = result.commandId;
      const command = id === null ? undefined : commands.get(id);
      if (id !== null && command === undefined) {
        early.set(id, { result, receivedAt: record.receivedAt });
        // Printed without a latency if its command does not show up soon (sent before we started watching).
        setTimeout(() => {
          const still = early.get(id);
          if (still === undefined) return;
          early.delete(id);
          print(formatOutcome(still.result, undefined, still.receivedAt));
        }, 2000).unref();
        return;
      }
      print(formatOutcome(result, command, record.receivedAt));
    },
    { groupPrefix: 'kafka-aggregates-live' },
  );
};
