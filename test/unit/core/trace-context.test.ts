import { describe, expect, it } from 'vitest';
import { parseTraceparent, spanOf, traceIdsOf, traceparentOf, tracesOf } from '../../../functions/core/trace-context.ts';
import type { MskEvent } from '../../../functions/core/trigger-event.ts';

const valid = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const bytes = (text: string) => [...Buffer.from(text)];

describe('W3C traceparent', () => {
  it('reads version 00 and refuses what the specification says to ignore', () => {
    expect(parseTraceparent(valid)).toEqual({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', parentId: '00f067aa0ba902b7', flags: '01' });
    for (const bad of [
      undefined,
      '',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
      `${valid}-extra`,
    ])
      expect(parseTraceparent(bad), String(bad)).toBeUndefined();
    // A later version is read by its version-00 fields.
    expect(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more')?.traceId).toBe(
      '4bf92f3577b34da6a3ce929d0e0e4736',
    );
  });

  it('makes a span of the parent trace, or of a new sampled one when the parent is absent or invalid', () => {
    const child = parseTraceparent(spanOf(valid));
    expect(child?.traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(child?.parentId).not.toBe('00f067aa0ba902b7');
    for (const parent of [undefined, 'nonsense']) {
      const fresh = parseTraceparent(spanOf(parent));
      expect(fresh?.flags).toBe('01');
      expect(fresh?.traceId).toMatch(/^[0-9a-f]{32}$/);
    }
    expect(parseTraceparent(spanOf())?.traceId).not.toBe(parseTraceparent(spanOf())?.traceId);
  });

  it("reads the header from the trigger's byte arrays, skipping invalid ones", () => {
    expect(traceparentOf({ headers: [{ other: bytes('x') }, { traceparent: bytes(valid) }] })).toBe(valid);
    expect(traceparentOf({ headers: [{ traceparent: bytes('garbage') }] })).toBeUndefined();
    expect(traceparentOf({ headers: [{ traceparent: [300, 1] }] })).toBeUndefined();
    expect(traceparentOf({ headers: 'not a list' })).toBeUndefined();
    expect(traceparentOf({})).toBeUndefined();
  });

  it("lists a batch's distinct trace ids, and each traced item's traceparent by its id", () => {
    const other = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const record = (offset: number, traceparent?: string) => ({
      topic: 't',
      partition: 0,
      offset,
      timestamp: 0,
      ...(traceparent === undefined ? {} : { headers: [{ traceparent: bytes(traceparent) }] }),
    });
    const records = [record(0, valid), record(1), record(2, other), record(3, valid)];
    const event: MskEvent = { eventSource: 'aws:kafka', records: { 't-0': records } };
    expect(traceIdsOf(event)).toEqual(['4bf92f3577b34da6a3ce929d0e0e4736', '0af7651916cd43dd8448eb211c80319c']);
    expect(
      tracesOf(
        records,
        (r) => `c${r.offset}`,
        (r) => r,
      ),
    ).toEqual(
      new Map([
        ['c0', valid],
        ['c2', other],
        ['c3', valid],
      ]),
    );
  });
});
