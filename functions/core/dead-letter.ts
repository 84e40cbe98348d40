/**
 * The dead-letter record of a trigger record that could not be handled: the reason and the
 * original key, value and headers exactly as the trigger delivered them. Shared by the
 * command and event sides; pure.
 */
import type { RawRecord } from './msk-event.ts';
import type { DeadLetterRecord, Reason } from './wire.ts';

/** A dead letter with the original record key, byte for byte (the shape the publishers send). */
export interface DeadLetter {
  readonly key: Uint8Array | undefined;
  readonly record: DeadLetterRecord;
}

/** Builds the dead letter of `record`, keyed by its original key bytes. */
export const deadLetter = (record: RawRecord, reason: Reason): DeadLetter => {
  const { original } = record;
  const value: DeadLetterRecord = {
    reason,
    source: { topic: record.topic, partition: record.partition, offset: record.offset, timestamp: record.timestamp },
    key: original.key ?? null,
    value: original.value ?? null,
    headers: original.headers ?? [],
  };
  return { key: record.key, record: value };
};
