/**
 * The dedupe window across producers whose clocks differ: a command's time is its record's
 * timestamp, stamped by its producer. A head lists its archive pages for the window and a day
 * (PAGE_MARGIN_MS) past its newest command, so a producer up to a day ahead of another does not
 * make it drop a page the other's re-send, within the window by its own clock, still needs.
 */
import { describe, expect, it } from 'vitest';
import { decideAggregate, type AggregateOutcome } from '../../../functions/command/decide-aggregate.ts';
import { decodeCommand, type IncomingCommand } from '../../../functions/command/decode.ts';
import { decodeMskEvent } from '../../../functions/core/trigger-event.ts';
import { registry } from '../../../functions/core/registry.ts';
import { account } from '../../../functions/domain/account/index.ts';
import { findInPages, PAGE_MARGIN_MS, type ArchivePage } from '../../../functions/heads/archive-pages.ts';
import { emptyHead, WRITE_UNIT_BYTES, type ArchivedCommand, type Head } from '../../../functions/heads/head.ts';
import { aggregateBatch, checkpointsThrough, WEEK_MS } from '../../support/decide.ts';
import { command, mskEvent } from '../../support/msk.ts';

const aggregates = registry([account]);
const T0 = Date.parse('2026-11-20T10:00:00.000Z');
const MINUTE = 60_000;

/** Commands of acc-1 at `offsets`, each record stamped `at(offset)`. */
const commands = async (offsets: readonly number[], at: (offset: number) => number, id = (o: number) => `c-${o}`) => {
  const event = mskEvent(
    offsets.map((offset) => ({
      offset,
      key: 'acc-1',
      timestamp: at(offset),
      value:
        offset === 0
          ? command('acc-1', 'OpenAccount', { owner: 'Ada' }, { commandId: id(offset) })
          : command('acc-1', 'Deposit', { amount: 1 }, { commandId: id(offset) }),
    })),
  );
  return Promise.all(
    decodeMskEvent(event)
      .flat()
      .map(async (r): Promise<IncomingCommand> => {
        const decoded = await decodeCommand(r, aggregates);
        if (!('ok' in decoded)) throw new Error(decoded.bad.reason.message);
        return decoded.ok;
      }),
  );
};

/** Heads past one write unit, so that the oldest commands go into a page. */
const decide = (base: Head, batch: readonly IncomingCommand[], through: number, archived = new Map<string, ArchivedCommand>()) =>
  decideAggregate(
    aggregateBatch(base, batch, {
      checkpoints: checkpointsThrough(through),
      sizeOf: () => WRITE_UNIT_BYTES + 1,
      archived,
      dedupeWindowMs: WEEK_MS,
    }),
  );
const committed = (outcome: AggregateOutcome): Head => outcome.next as Head;

describe('the dedupe window across producers whose clocks differ', () => {
  it('keeps listing a page while a producer up to a day ahead sends, and recognises a re-send from a producer whose clock is right', async () => {
    const id = (o: number) => (o === 0 ? 'first' : `c-${o}`);
    // A producer whose clock is right: "first", then enough commands to page it (a batch pages none of its own).
    const early = await commands(
      Array.from({ length: 60 }, (_, o) => o),
      (o) => T0 + o,
      id,
    );
    const written = committed(decide(emptyHead('account', 'acc-1', account.initialState), early, -1));
    const paged = decide(written, await commands([60, 61], (o) => T0 + o), 59);
    const page = paged.page as ArchivePage;
    expect(findInPages([page], 'first')).toBeDefined();
    // Almost a week later, a producer a day less a minute ahead sends: by its clock the window has passed "first".
    const ahead = await commands([100], () => T0 + WEEK_MS - 10 * MINUTE + PAGE_MARGIN_MS - MINUTE);
    const head = committed(decide(committed(paged), ahead, 61));
    expect(head.pages?.map((p) => p.id)).toContain(page.id);
    // The producer whose clock is right sends "first" again, within the window by its clock: a duplicate.
    const resent = await commands(
      [101],
      () => T0 + WEEK_MS - 5 * MINUTE,
      () => 'first',
    );
    const archived = new Map([['first', findInPages([page], 'first') as ArchivedCommand]]);
    const again = decide(head, resent, 100, archived);
    expect(again.results.map((r) => [r.commandId, r.status])).toStrictEqual([['first', 'accepted']]);
    expect(again.results[0]).toMatchObject({ version: 1 });
  });
});
