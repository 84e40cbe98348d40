import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAggregate, type Message } from '../../../functions/core/aggregate.ts';
import { isChainFault, readEvent, readTriggerRecord } from '../../../functions/core/event-reader.ts';
import { decodeMskEvent } from '../../../functions/core/trigger-event.ts';
import { registry } from '../../../functions/core/registry.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { accountEvent, commandSource } from '../../support/events.ts';
import { mskEvent, type RecordSpec } from '../../support/msk.ts';

const known = registry(aggregates);
const opened = { ...accountEvent, type: 'AccountOpened', data: { owner: 'Ada' } };
const good = { ...opened, source: commandSource };

const read = (spec: Omit<RecordSpec, 'offset'>) => {
  const [record] = decodeMskEvent(mskEvent([{ offset: 5, ...spec }], 'events')).flat();
  return readTriggerRecord(record!, known);
};

// A note whose `text` was called `body` at revision 1; `NoteErased` became `NoteCleared`.
type Note = Message<'NoteWritten', { readonly text: string }> | Message<'NoteCleared', Record<string, never>>;
const note = defineAggregate<Record<string, never>, Note, Note>({
  type: 'note',
  initialState: {},
  evolve: (s) => s,
  decide: () => [],
  commands: { NoteWritten: z.strictObject({ text: z.string() }), NoteCleared: z.strictObject({}) },
  events: { NoteWritten: z.strictObject({ text: z.string() }), NoteCleared: z.strictObject({}) },
  upcasters: {
    NoteWritten: { 1: ({ data: { body, ...rest } }) => ({ type: 'NoteWritten', revision: 2, data: { ...rest, text: body } }) },
    NoteErased: { 1: () => ({ type: 'NoteCleared', revision: 1, data: {} }) },
  },
});
const notes = registry([note]);
const noteRecord = (type: string, revision: number | undefined, data: object, version = 3) => ({
  key: 'n-1',
  value: JSON.stringify({
    ...good,
    eventId: `note:n-1:${version}`,
    aggregateType: 'note',
    aggregateId: 'n-1',
    version,
    type,
    data,
    ...(revision === undefined ? {} : { revision }),
  }),
  position: { topic: 'events', partition: 2, offset: 40 },
});

describe('the event reader', () => {
  it('reads an event record of the wire contract: the envelope as stored, the event, and where it was read', () => {
    expect(read({ key: 'acc-1', value: good })).toEqual({
      event: {
        stored: good,
        event: opened,
        upcast: false,
        position: { topic: 'events', partition: 0, offset: 5 },
      },
    });
  });

  it.each([
    ['value not base64', { key: 'acc-1', rawValue: '%%%' }, 'InvalidEvent', /base64/],
    ['no value', { key: 'acc-1', value: null }, 'InvalidEvent', /no value/],
    ['value not UTF-8', { key: 'acc-1', value: Uint8Array.from([0x7b, 0xff, 0x7d]) }, 'InvalidEvent', /UTF-8/],
    ['value not JSON', { key: 'acc-1', value: '{"eventId":' }, 'InvalidEvent', /not JSON/],
    ['missing version', { key: 'acc-1', value: { ...good, version: undefined } }, 'InvalidEvent', /version/],
    ['version 0', { key: 'acc-1', value: { ...good, version: 0 } }, 'InvalidEvent', /version/],
    ['revision 0', { key: 'acc-1', value: { ...good, revision: 0 } }, 'InvalidEvent', /revision/],
    ['key differs from aggregateId', { key: 'acc-2', value: good }, 'KeyMismatch', /"acc-2" differs from aggregateId "acc-1"/],
    ['no key', { key: null, value: good }, 'KeyMismatch', /\(none\)/],
  ])('refuses a record with %s, naming its position, as a fault of the record', (_label, spec, code, message) => {
    const outcome = read(spec);
    if (!('fault' in outcome)) throw new Error('expected a fault');
    expect(outcome.fault.code).toBe(code);
    expect(outcome.fault.message).toMatch(message);
    expect(outcome.fault.message).toMatch(/^events-0 offset 5: /);
    expect(isChainFault(outcome.fault)).toBe(false);
  });

  it.each([
    [
      'data its schema refuses at the current revision',
      { ...good, data: { owner: 7 } },
      'SchemaRefused',
      /invalid AccountOpened data: owner/,
    ],
    [
      'an aggregate type',
      { ...good, aggregateType: 'planet' },
      'UnknownAggregateType',
      /planet acc-1 version 2, AccountOpened revision 1: unknown aggregateType "planet"; known: account, alert$/,
    ],
    [
      'an event type',
      { ...good, type: 'MoneyTeleported' },
      'UnknownEventType',
      /account has no event "MoneyTeleported"; known: AccountOpened/,
    ],
    [
      'a revision',
      { ...good, revision: 2 },
      'UnknownRevision',
      /reads AccountOpened up to revision 1; a later revision was written by newer code$/,
    ],
  ])(
    'reads a well-formed record of %s this code does not know as a fault of the code, not of the record',
    (_label, value, code, message) => {
      const outcome = read({ key: 'acc-1', value });
      if (!('fault' in outcome)) throw new Error('expected a fault');
      expect(outcome.fault).toMatchObject({ code, stored: { aggregateId: 'acc-1', version: 2 } });
      expect(outcome.fault.message).toMatch(/^events-0 offset 5: /);
      expect(outcome.fault.message).toMatch(message);
      expect(isChainFault(outcome.fault)).toBe(true);
    },
  );

  it('reads a record without a revision as revision 1, through its upcasters, keeping the stored envelope', () => {
    const outcome = readEvent(noteRecord('NoteWritten', undefined, { body: 'hi' }), notes);
    if ('fault' in outcome) throw new Error(outcome.fault.message);
    expect(outcome.event.event).toMatchObject({ eventId: 'note:n-1:3', version: 3, type: 'NoteWritten', data: { text: 'hi' } });
    expect(outcome.event.stored).toMatchObject({ type: 'NoteWritten', data: { body: 'hi' } });
    expect(outcome.event.upcast).toBe(true);
  });

  it('reads a retired type as its successor, and the current revision as it is', () => {
    const erased = readEvent(noteRecord('NoteErased', undefined, {}), notes);
    expect('event' in erased && erased.event.event).toMatchObject({ type: 'NoteCleared', data: {}, version: 3 });
    const current = readEvent(noteRecord('NoteWritten', 2, { text: 'hi' }), notes);
    expect('event' in current && current.event).toMatchObject({ event: { data: { text: 'hi' } }, upcast: false });
  });

  it('names the position, aggregate, version, type and revision of a record whose chain fails, as a fault of the code', () => {
    const outcome = readEvent(noteRecord('NoteWritten', 1, { text: 'already renamed' }), notes);
    if (!('fault' in outcome)) throw new Error('expected a fault');
    expect(outcome.fault).toMatchObject({ code: 'UpcastFailed', position: { topic: 'events', partition: 2, offset: 40 } });
    expect(outcome.fault.message).toMatch(
      /^events-2 offset 40: note n-1 version 3, NoteWritten revision 1: upcast from NoteWritten revision 1 into NoteWritten revision 2: the data fails the NoteWritten schema/,
    );
    expect(isChainFault(outcome.fault)).toBe(true);
    const newer = readEvent(noteRecord('NoteWritten', 3, { text: 'x' }), notes);
    expect('fault' in newer && newer.fault.code).toBe('UnknownRevision');
  });
});
