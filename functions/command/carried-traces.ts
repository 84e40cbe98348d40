/**
 * The trace context of events re-sent from an unconfirmed outbox: a batch committed but failed
 * to publish, and the batch that publishes its outbox again need not hold the commands that
 * caused those events (the trigger may deliver it again in another shape). Their `traceparent`
 * is read back from the commands topic at the position each event names, so the re-sent events
 * carry the original trace and `trace` still shows the whole chain. Only events whose command
 * is not in the batch are looked up: one read per commands partition that has any, after a failure.
 */
import { topicPartition, type EventRecord } from '../core/wire.ts';
import type { CommandLog } from './ports.ts';

/** Most records read back per partition; a carried outbox comes from one batch's commands, far fewer. */
const MAX_READ = 1_000;

const commandIdOf = (value: Buffer | null): string | undefined => {
  try {
    const parsed: unknown = value === null ? undefined : JSON.parse(value.toString('utf8'));
    const id = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>).commandId : undefined;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
};

/**
 * Adds to `traces` (by commandId) the `traceparent` of the commands of `events` that are not in
 * the batch (`inBatch`), read from the commands topic in the incarnation the batch is in
 * (`incarnationOf`); a command record found without one, or not read, adds nothing.
 */
export const addCarriedTraces = async (
  commandLog: Pick<CommandLog, 'sample'>,
  events: readonly EventRecord[],
  traces: Map<string, string>,
  inBatch: (tp: string, offset: number) => boolean,
  incarnationOf: (tp: string) => number,
): Promise<void> => {
  const wanted = new Map<string, { topic: string; partition: number; byOffset: Map<number, string> }>();
  for (const { commandId, source } of events) {
    const tp = topicPartition(source);
    if (traces.has(commandId) || inBatch(tp, source.offset) || (source.incarnation ?? 1) !== incarnationOf(tp)) continue;
    const entry = wanted.get(tp) ?? { topic: source.topic, partition: source.partition, byOffset: new Map<number, string>() };
    entry.byOffset.set(source.offset, commandId);
    wanted.set(tp, entry);
  }
  await Promise.all(
    [...wanted.values()].map(async ({ topic, partition, byOffset }) => {
      const offsets = [...byOffset.keys()];
      const from = Math.min(...offsets);
      const to = Math.max(...offsets);
      // The trace is for following, the events are what counts: a failed read (the topic gone,
      // a broker away) sends them without a header rather than holding the partition.
      const records = await commandLog.sample(topic, partition, from, to, Math.min(to - from + 1, MAX_READ)).catch(() => []);
      for (const record of records) {
        const commandId = byOffset.get(record.offset);
        // The record at the position is that command (the topic was not recreated under it).
        if (commandId !== undefined && record.traceparent !== undefined && commandIdOf(record.value) === commandId)
          traces.set(commandId, record.traceparent);
      }
    }),
  );
};
