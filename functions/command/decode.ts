/**
 * Turns a raw commands-topic record into a command the aggregate can decide, or into a
 * precise rejection, and a batch's records into commands grouped per aggregate. Every fault
 * is a value: nothing here throws for bad input.
 */
import { aggregateKey, type AnyAggregate } from '../core/aggregate.ts';
import { deadLetter, type DeadLetter } from '../core/dead-letter.ts';
import { decodeUtf8, keyIs, type TriggerRecord } from '../core/trigger-event.ts';
import { describeIssues } from '../core/schema.ts';
import { isWellFormed } from '../core/limits.ts';
import { checkCommand, MAX_COMMAND_BYTES, type CommandEnvelope, type Reason } from '../core/wire.ts';
import type { KeyedResult } from './ports.ts';

/** A well-formed command addressed to a known aggregate type, its data validated. */
export interface IncomingCommand {
  readonly record: TriggerRecord;
  readonly envelope: CommandEnvelope;
  readonly aggregate: AnyAggregate;
  /** The command as the aggregate's `decide` receives it. */
  readonly command: { readonly type: string; readonly data: unknown };
}

/** A record that cannot be decided, with whatever identity could be recovered from it. */
export interface BadCommand {
  readonly record: TriggerRecord;
  readonly reason: Reason;
  readonly commandId: string | null;
  readonly aggregateType: string | null;
  readonly aggregateId: string | null;
}

/** Outcome of decoding one record. */
export type Decoded = { readonly ok: IncomingCommand } | { readonly bad: BadCommand };

const stringField = (value: unknown, field: string): string | null => {
  if (typeof value !== 'object' || value === null) return null;
  const v = (value as Record<string, unknown>)[field];
  // An id that is not well-formed can be neither keyed nor stored: the rejection goes without it.
  return typeof v === 'string' && v !== '' && isWellFormed(v) ? v : null;
};

/** Decodes and validates one command record against the deployment's aggregates. */
export const decodeCommand = async (
  record: TriggerRecord,
  aggregates: ReadonlyMap<string, AnyAggregate>,
  maxBytes = MAX_COMMAND_BYTES,
): Promise<Decoded> => {
  let parsed: unknown = undefined;
  const bad = (code: string, message: string): Decoded => ({
    bad: {
      record,
      reason: { code, message },
      commandId: stringField(parsed, 'commandId'),
      aggregateType: stringField(parsed, 'aggregateType'),
      aggregateId: stringField(parsed, 'aggregateId'),
    },
  });

  if (record.valueFault !== undefined) return bad('InvalidCommand', record.valueFault);
  if (record.value === undefined) return bad('InvalidCommand', 'record has no value');
  if (record.value.byteLength > maxBytes)
    return bad('PayloadTooLarge', `command is ${record.value.byteLength} bytes; the limit is ${maxBytes}`);
  const text = decodeUtf8(record.value);
  if (text === undefined) return bad('InvalidCommand', 'record value is not valid UTF-8');
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return bad('InvalidCommand', `record value is not JSON: ${(error as Error).message}`);
  }
  if (record.keyFault !== undefined) return bad('InvalidCommand', record.keyFault);
  const checked = checkCommand(parsed);
  if ('rejected' in checked) return bad(checked.rejected.code, checked.rejected.message);
  const envelope = checked.ok;
  const { aggregateId, aggregateType, type, data } = envelope;

  // Kafka partitions by the key's bytes, so compare bytes: text equality would let a key with a
  // byte-order mark (stripped by decoding) pass while it hashes to another partition.
  const key = record.key === undefined ? undefined : decodeUtf8(record.key);
  if (!keyIs(record.key, aggregateId))
    return bad(
      'KeyMismatch',
      `record key ${key === undefined ? '(none)' : JSON.stringify(key)} differs from aggregateId ${JSON.stringify(aggregateId)}; ` +
        'commands must be keyed by aggregateId to keep per-aggregate order',
    );
  const aggregate = aggregates.get(aggregateType);
  if (aggregate === undefined)
    return bad(
      'UnknownAggregateType',
      `unknown aggregateType ${JSON.stringify(aggregateType)}; known: ${[...aggregates.keys()].join(', ')}`,
    );
  const schemas = aggregate.commands as Readonly<Record<string, (typeof aggregate.commands)[string]>>;
  const schema = Object.hasOwn(schemas, type) ? schemas[type] : undefined;
  if (schema === undefined)
    return bad('UnknownCommandType', `${aggregateType} has no command ${JSON.stringify(type)}; known: ${Object.keys(schemas).join(', ')}`);
  const validated = await schema['~standard'].validate(data);
  if (validated.issues !== undefined) return bad('InvalidCommand', `invalid ${type} data: ${describeIssues(validated.issues)}`);
  return { ok: { record, envelope, aggregate, command: { type, data: validated.value } } };
};

/** A batch's records decoded: good commands grouped by head key in partition order, bad ones already answered. */
export interface DecodedBatch {
  readonly byAggregate: Map<string, IncomingCommand[]>;
  readonly results: KeyedResult[];
  readonly deadLetters: DeadLetter[];
}

/** Decodes a batch's records: a rejected result and a dead letter for each bad one, the rest grouped per aggregate. */
export const decodeBatch = async (
  records: readonly TriggerRecord[],
  aggregates: ReadonlyMap<string, AnyAggregate>,
): Promise<DecodedBatch> => {
  const batch: DecodedBatch = { byAggregate: new Map(), results: [], deadLetters: [] };
  for (const record of records) {
    const decoded = await decodeCommand(record, aggregates);
    if ('bad' in decoded) {
      const { bad } = decoded;
      batch.results.push({
        key: bad.aggregateId ?? (record.key === undefined ? null : Buffer.from(record.key).toString('utf8')),
        result: {
          commandId: bad.commandId,
          aggregateType: bad.aggregateType,
          aggregateId: bad.aggregateId,
          status: 'rejected',
          reason: bad.reason,
        },
      });
      batch.deadLetters.push(deadLetter(record, bad.reason));
      continue;
    }
    const key = aggregateKey(decoded.ok.aggregate.type, decoded.ok.envelope.aggregateId);
    const list = batch.byAggregate.get(key) ?? [];
    list.push(decoded.ok);
    batch.byAggregate.set(key, list);
  }
  return batch;
};
