import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decideAggregate } from '../../../functions/command/decide-aggregate.ts';
import { decodeCommand, type IncomingCommand } from '../../../functions/command/decode.ts';
import { emptyHead, type Head } from '../../../functions/heads/head.ts';
import { registry } from '../../../functions/core/registry.ts';
import { decodeMskEvent, type TriggerRecord } from '../../../functions/core/trigger-event.ts';
import type { ResultRecord } from '../../../functions/core/wire.ts';
import { account } from '../../../functions/domain/account/index.ts';
import { aggregates as deployed } from '../../../functions/domain/index.ts';
import { aggregateBatch, checkpointsThrough } from '../../support/decide.ts';
import { b64, deeplyNestedDeposit, fuzz, toMskRecord } from './arbitraries.ts';

const aggregates = registry(deployed);
const ID = 'acc-\u{1F600}\u202E1';
const TP = 'commands-0';

/** One command of the generated stream: which commandId it reuses (a re-send) and its expectedVersion, if any. */
interface Cmd {
  readonly type: 'OpenAccount' | 'Deposit' | 'Withdraw' | 'CloseAccount';
  readonly amount: number;
  readonly resendOf: number | null;
  readonly expectedVersion: number | null;
}

const cmd: fc.Arbitrary<Cmd> = fc.record({
  type: fc.constantFrom('OpenAccount', 'Deposit', 'Deposit', 'Withdraw', 'Withdraw', 'CloseAccount'),
  amount: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.constantFrom(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER - 1, 2 ** 52)),
  resendOf: fc.option(fc.nat({ max: 60 }), { freq: 5 }),
  expectedVersion: fc.option(fc.nat({ max: 8 }), { freq: 4 }),
});

/** Records at offsets 0..n-1 of one partition, decoded as the command handler does. */
const incoming = async (cmds: readonly Cmd[]): Promise<IncomingCommand[]> => {
  const ids = cmds.map((c, i) => (c.resendOf !== null && c.resendOf < i ? `c-${c.resendOf}` : `c-${i}`));
  const records = cmds.map((c, i) =>
    toMskRecord(
      {
        key: b64(ID),
        value: b64(
          JSON.stringify({
            commandId: ids[i],
            aggregateType: 'account',
            aggregateId: ID,
            type: c.type,
            data: c.type === 'OpenAccount' ? { owner: 'Ada' } : c.type === 'CloseAccount' ? {} : { amount: c.amount },
            ...(c.expectedVersion === null ? {} : { expectedVersion: c.expectedVersion }),
          }),
        ),
        headers: [],
      },
      'commands',
      0,
      i,
    ),
  );
  const raw = decodeMskEvent({ eventSource: 'aws:kafka', records: { [TP]: records } }).flat();
  return Promise.all(
    raw.map(async (r: TriggerRecord) => {
      const decoded = await decodeCommand(r, aggregates);
      if (!('ok' in decoded)) throw new Error(`generated command did not decode: ${decoded.bad.reason.message}`);
      return decoded.ok;
    }),
  );
};

/** The account rules and the dedupe contract, written out plainly: what every result must be. */
const model = (cmds: readonly Cmd[]) => {
  let status: 'unopened' | 'open' | 'closed' = 'unopened';
  let balance = 0;
  let version = 0;
  const accepted = new Map<string, number>();
  const results = cmds.map((c, i): string => {
    const commandId = c.resendOf !== null && c.resendOf < i ? `c-${c.resendOf}` : `c-${i}`;
    const before = accepted.get(commandId);
    if (before !== undefined) return `v${before}`;
    if (c.expectedVersion !== null && c.expectedVersion !== version) return 'VersionMismatch';
    const notOpen = status === 'unopened' ? 'AccountNotOpen' : 'AccountClosed';
    let code: string | null = null;
    switch (c.type) {
      case 'OpenAccount':
        if (status !== 'unopened') code = 'AccountAlreadyExists';
        else status = 'open';
        break;
      case 'Deposit':
        if (status !== 'open') code = notOpen;
        else if (c.amount > Number.MAX_SAFE_INTEGER - balance) code = 'BalanceOverflow';
        else balance += c.amount;
        break;
      case 'Withdraw':
        if (status !== 'open') code = notOpen;
        else if (c.amount > balance) code = 'InsufficientFunds';
        else balance -= c.amount;
        break;
      case 'CloseAccount':
        if (status !== 'open') code = notOpen;
        else if (balance !== 0) code = 'BalanceNotZero';
        else status = 'closed';
        break;
    }
    if (code !== null) return code;
    version++;
    accepted.set(commandId, version);
    return `v${version}`;
  });
  return { results, version, status, balance };
};

const show = (results: readonly ResultRecord[]): string[] =>
  results.map((r) => (r.status === 'accepted' ? `v${r.version}` : r.reason.code));

const confirmed = (through: number) => checkpointsThrough(through, TP);

describe('decideAggregate on random command streams', () => {
  it('answers every command as the account rules and the dedupe contract say, with versions 1..n and a balance that never goes negative', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmd, { minLength: 1, maxLength: 60 }), async (cmds) => {
        const outcome = decideAggregate(aggregateBatch(emptyHead('account', ID, account.initialState), await incoming(cmds)));
        const want = model(cmds);
        expect(show(outcome.results)).toEqual(want.results);
        expect(outcome.toPublish.map((e) => e.version)).toEqual(Array.from({ length: want.version }, (_, i) => i + 1));
        expect(outcome.next?.version ?? 0).toBe(want.version);
        if (outcome.next !== null) {
          const state = outcome.next.state as { status: string; balance?: number };
          expect(state.status).toBe(want.status);
          if (state.status === 'open') expect(state.balance).toBe(want.balance);
        }
        expect(outcome.deadLetters).toEqual([]);
      }),
      fuzz(300),
    );
  });

  it('gives the same answers whether the stream comes in one batch or several, and re-emits the original results when a batch is redelivered', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(cmd, { minLength: 2, maxLength: 40 }),
        fc.uniqueArray(fc.nat({ max: 39 }), { maxLength: 4 }),
        fc.nat(),
        async (cmds, cuts, replay) => {
          const all = await incoming(cmds);
          const whole = decideAggregate(aggregateBatch(emptyHead('account', ID, account.initialState), all));
          const bounds = [0, ...cuts.filter((c) => c > 0 && c < all.length).sort((a, b) => a - b), all.length];
          let head: Head = emptyHead('account', ID, account.initialState);
          const results: ResultRecord[] = [];
          const batches: { base: Head; commands: IncomingCommand[]; results: readonly ResultRecord[] }[] = [];
          for (let i = 0; i + 1 < bounds.length; i++) {
            const commands = all.slice(bounds[i], bounds[i + 1]);
            const outcome = decideAggregate(aggregateBatch(head, commands, { checkpoints: confirmed((bounds[i] ?? 0) - 1) }));
            batches.push({ base: head, commands, results: outcome.results });
            results.push(...outcome.results);
            head = outcome.next ?? head;
          }
          expect(results).toEqual(whole.results);
          expect(head.version).toBe(whole.next?.version ?? 0);
          expect(head.state).toEqual(whole.next?.state ?? account.initialState);
          // The trigger redelivers a batch that was committed: nothing new, and the original answer of
          // each command. A rejection the head no longer keeps is answered as such, or, when its
          // commandId was accepted since (re-sent), with that acceptance: the command's one effect.
          const again = batches[replay % batches.length] as (typeof batches)[number];
          const redelivered = decideAggregate(aggregateBatch(head, again.commands, { checkpoints: confirmed(all.length - 1) }));
          expect(redelivered.next).toBeNull();
          expect(redelivered.toPublish).toEqual([]);
          redelivered.results.forEach((result, i) => {
            const original = again.results[i];
            if (JSON.stringify(result) === JSON.stringify(original)) return;
            expect(original?.status).toBe('rejected');
            if (result.status === 'rejected') expect(result.reason.code).toBe('OutcomeNotRetained');
            else expect(results).toContainEqual(result);
          });
        },
      ),
      fuzz(200),
    );
  });

  it('never throws on a readable command nested deep in its metadata: it is rejected as NestingTooDeep, or decided into a head and events that serialise', async () => {
    const open = (await incoming([{ type: 'OpenAccount', amount: 1, resendOf: null, expectedVersion: null }]))[0] as IncomingCommand;
    const opened = decideAggregate(aggregateBatch(emptyHead('account', ID, account.initialState), [open])).next as Head;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 20_000 }), async (depth) => {
        const record = decodeMskEvent({
          eventSource: 'aws:kafka',
          records: {
            [TP]: [toMskRecord({ key: b64(ID), value: b64(deeplyNestedDeposit(ID, 'c-deep', depth)), headers: [] }, 'commands', 0, 1)],
          },
        }).flat()[0] as TriggerRecord;
        const decoded = await decodeCommand(record, aggregates);
        if ('bad' in decoded) {
          expect(decoded.bad.reason.code).toBe('NestingTooDeep');
          return;
        }
        const outcome = decideAggregate(aggregateBatch(opened, [decoded.ok], { checkpoints: confirmed(0) }));
        expect(show(outcome.results)).toEqual(['v2']);
        // What the heads table and the publisher will do with it.
        expect(() => JSON.stringify(outcome.next)).not.toThrow();
        expect(() => outcome.toPublish.map((e) => JSON.stringify(e))).not.toThrow();
      }),
      fuzz(60),
    );
  });
});
