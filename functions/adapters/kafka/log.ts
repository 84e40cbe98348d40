/**
 * kafkajs's log, with the errors it recovers from by itself moved down to DEBUG. kafkajs logs
 * an ERROR for every error response and every refused connection before its retrier tries
 * again: a partition whose leader is still being elected just after the topic was created, a
 * group coordinator still loading, a broker restarting. A request that still fails once the
 * retries are spent reaches its caller as an exception (and a consumer that gives up logs its
 * crash), so these lines would only announce, every time, a failure that is being handled.
 * Everything else keeps its level; `KAFKAJS_LOG_LEVEL=debug` shows the moved lines too.
 */
import { logLevel, type LogEntry, type logCreator } from 'kafkajs';
import { errorCodes } from 'kafkajs/src/protocol/error.js';

/** The messages of the protocol errors kafkajs retries (leader not available, not the leader, coordinator loading, ...). */
const retriableResponses = new Set(errorCodes.filter((e) => e.retriable).map((e) => e.message));

/** Errors thrown when the broker cannot be reached or answers too late: kafkajs retries them. */
const unreachable = /^(KafkaJSConnectionError|KafkaJSConnectionClosedError|KafkaJSRequestTimeoutError|KafkaJSNumberOfRetriesExceeded)\b/;

/** True when an ERROR entry reports a failure that kafkajs retries by itself. */
export const isRetried = ({ namespace, log }: Pick<LogEntry, 'namespace' | 'log'>): boolean => {
  const { message } = log;
  switch (namespace) {
    case 'Connection':
      // `Response Metadata(key: 3, version: 6)` with the error in its own field; or the socket failed.
      return message.startsWith('Response ') ? retriableResponses.has(String(log.error)) : /^Connection (error|timeout)/.test(message);
    case 'BrokerPool':
      return message.startsWith('Failed to connect to seed broker');
    case 'Producer':
      return message.startsWith('Failed to send messages');
    case 'Consumer':
      // The consumer restarts after a retriable crash, and says so in a second line.
      return message.startsWith('Restarting the consumer') || unreachable.test(message.replace(/^Crash: /, ''));
    default:
      return false;
  }
};

const write: Record<number, (line: string) => void> = {
  [logLevel.ERROR]: (line) => console.error(line),
  [logLevel.WARN]: (line) => console.warn(line),
  [logLevel.INFO]: (line) => console.info(line),
  [logLevel.DEBUG]: (line) => console.log(line),
};

/**
 * kafkajs's console log (one JSON line per entry, as its default logger writes it), with
 * retried errors at DEBUG: shown when the client's level (its `logLevel`, or
 * `KAFKAJS_LOG_LEVEL`) was DEBUG when it was created.
 */
export const kafkaLogCreator: logCreator = (level) => (entry: LogEntry) => {
  const demoted = entry.level === logLevel.ERROR && isRetried(entry);
  if (demoted && level < logLevel.DEBUG) return;
  const label = demoted ? 'DEBUG' : entry.label;
  const prefix = entry.namespace === '' ? '' : `[${entry.namespace}] `;
  write[demoted ? logLevel.DEBUG : entry.level]?.(JSON.stringify({ level: label, ...entry.log, message: `${prefix}${entry.log.message}` }));
};
