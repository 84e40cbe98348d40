import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deadLetter } from '../../../functions/core/dead-letter.ts';
import { decodeMskEvent, type MskEvent, type MskRecord } from '../../../functions/core/trigger-event.ts';
import { b64, badBase64, fuzz, headers, toMskRecord, unicodeText } from './arbitraries.ts';

/** A key or value field as a trigger (or something pretending to be one) might send it. */
type Field =
  | { readonly kind: 'absent' }
  | { readonly kind: 'null' }
  | { readonly kind: 'bytes'; readonly bytes: Uint8Array }
  | { readonly kind: 'bad'; readonly text: string };

const field: fc.Arbitrary<Field> = fc.oneof(
  fc.constant<Field>({ kind: 'absent' }),
  fc.constant<Field>({ kind: 'null' }),
  fc.uint8Array({ maxLength: 64 }).map((bytes): Field => ({ kind: 'bytes', bytes })),
  unicodeText(0, 6).map((text): Field => ({ kind: 'bytes', bytes: Buffer.from(text) })),
  unicodeText(1, 4)
    .chain(badBase64)
    .map((text): Field => ({ kind: 'bad', text })),
);

const wire = (f: Field): string | null | undefined =>
  f.kind === 'absent' ? undefined : f.kind === 'null' ? null : f.kind === 'bytes' ? b64(f.bytes) : f.text;

const records = fc.array(
  fc.record({ key: field, value: field, headers, partition: fc.integer({ min: 0, max: 2 }), offset: fc.nat({ max: 1_000_000 }) }),
  { maxLength: 20 },
);

const event = (
  specs: readonly { key: Field; value: Field; headers: unknown; partition: number; offset: number }[],
): { event: MskEvent; byRecord: Map<MskRecord, Field[]> } => {
  const grouped: Record<string, MskRecord[]> = {};
  const byRecord = new Map<MskRecord, Field[]>();
  specs.forEach((s) => {
    const record = toMskRecord({ key: wire(s.key), value: wire(s.value), headers: s.headers }, 'commands', s.partition, s.offset);
    byRecord.set(record, [s.key, s.value]);
    (grouped[`commands-${s.partition}`] ??= []).push(record);
  });
  return { event: { eventSource: 'aws:kafka', records: grouped }, byRecord };
};

describe('decodeMskEvent on random and hostile trigger payloads', () => {
  it('never throws; decodes sound base64 to the exact bytes, describes every other key and value as a fault, and sorts each partition by offset', () => {
    fc.assert(
      fc.property(records, (specs) => {
        const { event: e, byRecord } = event(specs);
        const partitions = decodeMskEvent(e);
        expect(partitions.flat()).toHaveLength(specs.length);
        for (const partition of partitions) {
          expect(partition.map((r) => r.offset)).toEqual(partition.map((r) => r.offset).sort((a, b) => a - b));
          for (const record of partition) {
            const [key, value] = byRecord.get(record.original) as [Field, Field];
            for (const [f, bytes, fault] of [
              [key, record.key, record.keyFault],
              [value, record.value, record.valueFault],
            ] as const) {
              if (f.kind === 'bytes') {
                expect(bytes !== undefined && Buffer.from(bytes).equals(Buffer.from(f.bytes))).toBe(true);
                expect(fault).toBeUndefined();
              } else {
                expect(bytes).toBeUndefined();
                expect(fault === undefined).toBe(f.kind !== 'bad');
              }
            }
          }
        }
      }),
      fuzz(500),
    );
  });

  it('builds a dead letter that carries the original key, value and headers verbatim and survives a JSON round trip', () => {
    fc.assert(
      fc.property(
        records.filter((r) => r.length > 0),
        fc.string({ maxLength: 20 }),
        (specs, message) => {
          const { event: e } = event(specs);
          for (const record of decodeMskEvent(e).flat()) {
            const { record: letter } = deadLetter(record, { code: 'InvalidCommand', message });
            const back = JSON.parse(JSON.stringify(letter)) as typeof letter;
            expect(back.key).toBe(record.original.key ?? null);
            expect(back.value).toBe(record.original.value ?? null);
            expect(back.headers).toEqual(record.original.headers ?? []);
            expect(back.source).toEqual({
              topic: record.topic,
              partition: record.partition,
              offset: record.offset,
              timestamp: record.timestamp,
            });
          }
        },
      ),
      fuzz(300),
    );
  });
});
