/**
 * One command traced end to end through the emulated triggers and both real handlers: a
 * withdrawal that leaves a balance low, its event, the read-model row and the reaction
 * checkpoint that applied it, the alert command the reaction issued (caused by the event, in
 * the withdrawal's correlation) and that command's own event, as `kafka-aggregates trace`
 * (the CLI as a child process) shows them, each record with its span in the withdrawal's trace.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { topicName } from '../../functions/config.ts';
import { parseTraceparent, TRACEPARENT } from '../../functions/core/trace-context.ts';
import type { ResultRecord } from '../../functions/core/wire.ts';
import type { TraceNode } from '../../local/trace/chain.ts';
import { bothSides } from '../support/both-sides.ts';
import { readJson } from '../support/kafka.ts';
import { command } from '../support/msk.ts';
import { runToEnd } from '../support/process.ts';
import { waitFor } from '../support/wait.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
const { run, kafka, producer, logs } = bothSides('trace');

describe('kafka-aggregates trace', () => {
  it("shows a withdrawal's result, its event with the row and the reaction that applied it, and the alert command it caused, with that command's own event", async () => {
    const id = `acc-${run}`;
    const withdraw = command(id, 'Withdraw', { amount: 950 });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = `00-${traceId}-00f067aa0ba902b7-01`;
    const commands = [command(id, 'OpenAccount', { owner: 'Ada' }), command(id, 'Deposit', { amount: 1000 }), withdraw];
    await producer().send({
      topic: topicName('commands'),
      messages: commands.map((c) => ({
        key: c.aggregateId,
        value: JSON.stringify(c),
        // The withdrawal in a caller's trace; the others in none.
        ...(c === withdraw ? { headers: { [TRACEPARENT]: callerSpan } } : {}),
      })),
    });
    // The reaction's command is decided too: two results for the aggregate id (the account's last, and the alert's).
    await waitFor('the alert command to be decided', async () =>
      (await readJson<ResultRecord>(kafka, topicName('results'))).some((r) => r.aggregateType === 'alert' && r.aggregateId === id),
    );

    let chain: TraceNode | undefined;
    await waitFor('the alert event to reach the read models', async () => {
      const traced = await runToEnd(process.execPath, ['bin/kafka-aggregates.js', 'trace', withdraw.commandId, '--json'], {
        cwd: root,
        env: { ...process.env },
      });
      expect(traced.code, traced.stderr).toBe(0);
      chain = JSON.parse(traced.stdout) as TraceNode;
      return chain.caused[0]?.events[0]?.items.every((i) => i.applied) === true && chain.events[0]?.items.every((i) => i.applied) === true;
    });

    const node = chain as TraceNode;
    expect(node.command).toMatchObject({ commandId: withdraw.commandId, aggregateType: 'account', type: 'Withdraw' });
    expect(node.results[0]).toMatchObject({ status: 'accepted', version: 3 });
    expect(node.events.map((e) => [e.event.eventId, e.event.type, e.event.correlationId])).toEqual([
      [`account:${id}:3`, 'MoneyWithdrawn', withdraw.commandId],
    ]);
    expect(node.events[0]?.items.map((i) => [i.kind, i.name, i.applied]).sort()).toEqual([
      ['projection', 'account-summary', true],
      ['reaction', 'low-balance-alert', true],
    ]);
    expect(node.caused).toHaveLength(1);
    const alert = node.caused[0] as TraceNode;
    // Caused by the event, in the withdrawal's correlation.
    expect(alert.command).toMatchObject({
      aggregateType: 'alert',
      aggregateId: id,
      type: 'RaiseLowBalanceAlert',
      causationId: `account:${id}:3`,
      correlationId: withdraw.commandId,
    });
    expect(alert.results[0]).toMatchObject({ status: 'accepted', version: 1 });
    expect(alert.events.map((e) => [e.event.aggregateType, e.event.version, e.event.correlationId])).toEqual([
      ['alert', 1, withdraw.commandId],
    ]);

    // Every record of the chain in the withdrawal's trace, each in a span of its own.
    const spans = [node.command?.traceparent, node.results[0]?.traceparent, node.events[0]?.traceparent];
    spans.push(alert.command?.traceparent, alert.results[0]?.traceparent, alert.events[0]?.traceparent);
    expect(spans[0]).toBe(callerSpan);
    expect(spans.map((s) => parseTraceparent(s)?.traceId)).toEqual(spans.map(() => traceId));
    const spanIds = spans.map((s) => parseTraceparent(s)?.parentId);
    expect(new Set(spanIds).size).toBe(spans.length);

    const lines = await runToEnd(process.execPath, ['bin/kafka-aggregates.js', 'trace', withdraw.commandId], {
      cwd: root,
      env: { ...process.env },
    });
    expect(lines.stdout).toContain(`command ${withdraw.commandId}  account ${id} Withdraw`);
    expect(lines.stdout).toContain(`caused by account:${id}:3`);
    // The trace id once, on the first command's line (the rest share it), and each record's span.
    const first = lines.stdout.split('\n')[0] ?? '';
    expect(first).toMatch(new RegExp(`^command ${withdraw.commandId} .*  trace ${traceId}  span 00f067aa0ba902b7$`));
    expect(lines.stdout.split(traceId)).toHaveLength(2);
    for (const span of spanIds.slice(1)) expect(lines.stdout).toContain(`span ${span}`);
  }, 90_000);

  it('exits 1 and says so for a commandId that no topic holds', async () => {
    const traced = await runToEnd(process.execPath, ['bin/kafka-aggregates.js', 'trace', `nobody-${run}`], {
      cwd: root,
      env: { ...process.env },
    });
    expect(traced.code).toBe(1);
    expect(traced.stdout).toContain(`command nobody-${run} (not on`);
  }, 60_000);

  it('logged no warning and no error from the handlers while the commands went through', () => {
    expect([...logs().at('WARN'), ...logs().at('ERROR')]).toEqual([]);
  });
});
