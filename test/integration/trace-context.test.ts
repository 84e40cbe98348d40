/**
 * W3C trace context end to end, through the emulated triggers and both real handlers: a
 * withdrawal sent by the CLI in a caller's trace (`send --traceparent`) carries that trace id in
 * its `traceparent` header, and so do its event, its result, the alert command the reaction
 * issued for the event, and that command's own event and result, each under a span of its own;
 * every log line of the invocations that handled them names the trace id. Commands sent with no
 * header get none invented downstream.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { topicName } from '../../functions/config.ts';
import { parseTraceparent } from '../../functions/core/trace-context.ts';
import type { CommandEnvelope, EventRecord, ResultRecord } from '../../functions/core/wire.ts';
import { bothSides } from '../support/both-sides.ts';
import { readTopic, type ReadRecord } from '../support/kafka.ts';
import { command } from '../support/msk.ts';
import { runToEnd } from '../support/process.ts';
import { waitFor } from '../support/wait.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));
// Every line, not only warnings.
const { run, kafka, producer, logs } = bothSides('tracectx', { logLevel: 'INFO' });

const parsed = <T>(records: readonly ReadRecord[]) =>
  records.map((r) => ({ value: JSON.parse(r.value ?? 'null') as T, header: r.headers.traceparent }));

describe('W3C trace context', () => {
  it("carries a command's trace id to its event, its result, the reaction's command and that command's event and result, and logs it", async () => {
    const id = `acc-${run}`;
    await producer().send({
      topic: topicName('commands'),
      messages: [command(id, 'OpenAccount', { owner: 'Ada' }), command(id, 'Deposit', { amount: 1000 })].map((c) => ({
        key: c.aggregateId,
        value: JSON.stringify(c),
      })),
    });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpan = `00-${traceId}-00f067aa0ba902b7-01`;
    const withdrawId = `withdraw-${run}`;
    const sent = await runToEnd(
      process.execPath,
      [
        'bin/kafka-aggregates.js',
        'send',
        'account',
        id,
        'Withdraw',
        '{"amount":950}',
        '--command-id',
        withdrawId,
        '--traceparent',
        callerSpan,
      ],
      { cwd: root, env: { ...process.env } },
    );
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stderr).toContain(`(trace ${traceId})`);

    // The deposit rearms the alert (a reaction command of its own); the withdrawal raises it.
    const raised = `low-balance-alert:account:${id}:3:0`;
    await waitFor('the alert command to be decided', async () =>
      parsed<ResultRecord>(await readTopic(kafka, topicName('results'))).some((r) => r.value.commandId === raised),
    );
    const commands = parsed<CommandEnvelope>(await readTopic(kafka, topicName('commands')));
    const events = parsed<EventRecord>(await readTopic(kafka, topicName('events')));
    const results = parsed<ResultRecord>(await readTopic(kafka, topicName('results')));

    const withdraw = commands.find((c) => c.value.commandId === withdrawId);
    const withdrawn = events.find((e) => e.value.commandId === withdrawId);
    const alert = commands.find((c) => c.value.causationId === withdrawn?.value.eventId);
    const alertEvent = events.find((e) => e.value.commandId === alert?.value.commandId);
    const traced = {
      'the command (the CLI, in the caller’s trace)': withdraw?.header,
      'its event': withdrawn?.header,
      'its result': results.find((r) => r.value.commandId === withdrawId)?.header,
      'the reaction’s command': alert?.header,
      'that command’s event': alertEvent?.header,
      'that command’s result': results.find((r) => r.value.commandId === alert?.value.commandId)?.header,
    };
    for (const [what, header] of Object.entries(traced)) expect(parseTraceparent(header)?.traceId, what).toBe(traceId);
    // Each hop is a span of its own: no two records share a parent id, and none is the caller's.
    const spans = Object.values(traced).map((h) => parseTraceparent(h)?.parentId);
    expect(new Set([...spans, '00f067aa0ba902b7']).size).toBe(spans.length + 1);
    expect(alert?.value.commandId).toBe(raised);
    // Sent with no header (by a producer other than the edges): nothing downstream invents one.
    const untraced = [
      ...events.filter((e) => e.value.aggregateType === 'account' && e.value.version < 3),
      ...commands.filter((c) => c.value.causationId === `account:${id}:2`),
    ];
    expect(untraced).toHaveLength(3);
    for (const record of untraced) expect(record.header).toBeUndefined();

    // The handlers' log lines of the invocations that handled a traced record name its trace id.
    const lines = logs().lines.filter((l) => l.service === 'command-handler' || l.service === 'event-handler') as {
      message: string;
      service?: string;
      traceIds?: string[];
    }[];
    const naming = lines.filter((l) => l.traceIds?.includes(traceId));
    expect(
      naming
        .filter((l) => l.message === 'batch done')
        .map((l) => l.service)
        .sort(),
    ).toEqual(expect.arrayContaining(['command-handler', 'event-handler']));
    // Every line carries the batch's trace ids (empty for batches of untraced records).
    for (const line of lines) expect(Array.isArray(line.traceIds), JSON.stringify(line)).toBe(true);
  }, 120_000);
});
