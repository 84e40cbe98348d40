/**
 * Property: any command, with arbitrary strings (lone surrogates, ids at and past their limits in characters of one to four bytes), deep
 * nesting and extreme numbers, is refused by the commands topic's decoder with a precise
 * code, or flows whole: its events are read back by every reader, at every version, and
 * every read-model item and reaction command they lead to is one DynamoDB and the commands
 * topic take (no refusal, no key problem).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCommand } from '../../../functions/command/decode.ts';
import { decideOne } from '../../../functions/command/decide-one.ts';
import { readEvent } from '../../../functions/core/event-reader.ts';
import {
  codePoints,
  contentProblem,
  MAX_AGGREGATE_ID_CHARS,
  MAX_COMMAND_DEPTH,
  MAX_COMMAND_ID_CHARS,
} from '../../../functions/core/limits.ts';
import { registry } from '../../../functions/core/registry.ts';
import { decodeMskEvent, type TriggerRecord } from '../../../functions/core/trigger-event.ts';
import { eventId, type EventRecord } from '../../../functions/core/wire.ts';
import { aggregates as deployed } from '../../../functions/domain/index.ts';
import { foldItem } from '../../../functions/event/fold.ts';
import { eventRegistry } from '../../../functions/event/registry.ts';
import { routeEvents } from '../../../functions/event/route.ts';
import { projections } from '../../../functions/projections/index.ts';
import { lowBalanceAlert } from '../../../functions/reactions/low-balance-alert.ts';
import { b64, COMMAND_CODES, fuzz, hostileOpen, openEnvelope, toMskRecord } from './arbitraries.ts';

const aggregates = registry(deployed);
const events = eventRegistry(deployed, projections, [lowBalanceAlert(1000)]);

const record = (value: string, key: string): TriggerRecord =>
  decodeMskEvent({
    eventSource: 'aws:kafka',
    records: { 'commands-0': [toMskRecord({ key: b64(key), value: b64(value), headers: [] }, 'commands', 0, 7)] },
  }).flat()[0] as TriggerRecord;

const CODES: readonly string[] = COMMAND_CODES;

describe('the limits, as a property of arbitrary commands', () => {
  it('refuses each at the decoder with a precise code, or its events are read by every reader and every item and reaction command they lead to is storable', async () => {
    await fc.assert(
      fc.asyncProperty(hostileOpen, async (c) => {
        const envelope = openEnvelope(c);
        const text = JSON.stringify(envelope);
        const decoded = await decodeCommand(record(text, c.aggregateId), aggregates);
        const content = contentProblem(JSON.parse(text), MAX_COMMAND_DEPTH);
        // The limits are exact, in characters: an id past one is refused as IdTooLong, whatever its bytes.
        const tooLong = codePoints(c.aggregateId) > MAX_AGGREGATE_ID_CHARS || codePoints(c.commandId) > MAX_COMMAND_ID_CHARS;
        const empty = c.aggregateId === '' || c.commandId === '';
        if ('bad' in decoded) {
          expect(CODES).toContain(decoded.bad.reason.code);
          expect(decoded.bad.reason.message.length).toBeGreaterThan(0);
          if (content !== undefined) expect(decoded.bad.reason.code).toBe(content.code);
          else if (tooLong && !empty) expect(decoded.bad.reason.code).toBe('IdTooLong');
          else if (decoded.bad.reason.code === 'IdTooLong') throw new Error(`IdTooLong within the limits: ${decoded.bad.reason.message}`);
          return;
        }
        expect(content).toBeUndefined();
        expect(tooLong).toBe(false);
        const opened = decideOne(decoded.ok, { status: 'unopened' }, 0);
        if (!('events' in opened)) throw new Error(`${opened.reason.code}: ${opened.reason.message}`);
        // The opening, a deposit and a low withdrawal (the reaction raises an alert), as the log holds them.
        const first = opened.events[0] as EventRecord;
        const log: EventRecord[] = [
          first,
          {
            ...first,
            version: 2,
            eventId: eventId('account', c.aggregateId, 2),
            type: 'MoneyDeposited',
            data: { amount: 500, currency: 'EUR' },
          },
          { ...first, version: 3, eventId: eventId('account', c.aggregateId, 3), type: 'MoneyWithdrawn', data: { amount: 450 } },
          // Never folded (it would be a gap), but readers must read it: the highest version.
          {
            ...first,
            version: Number.MAX_SAFE_INTEGER,
            eventId: eventId('account', c.aggregateId, Number.MAX_SAFE_INTEGER),
            type: 'MoneyWithdrawn',
            data: { amount: 1 },
          },
        ];
        const read = log.map((e, offset) =>
          readEvent({ key: c.aggregateId, value: JSON.stringify(e), position: { topic: 'events', partition: 0, offset } }, aggregates),
        );
        for (const r of read) if ('fault' in r) throw new Error(`a reader refused what the writer wrote: ${r.fault.message}`);
        const incoming = read.slice(0, 3).map((r) => ('event' in r ? { event: r.event.event, position: r.event.position } : undefined)!);
        const routes = routeEvents(incoming, events);
        for (const route of routes.values()) {
          expect(route.keyProblem).toBeUndefined();
          const plan = foldItem(route.folder, undefined, route.events);
          expect(plan.refused).toEqual([]);
        }
        const alerts = [...routes.values()].flatMap((route) => foldItem(route.folder, undefined, route.events).commands);
        expect(alerts.map((a) => a.type)).toEqual(['RaiseLowBalanceAlert']);
      }),
      fuzz(400),
    );
  });
});
