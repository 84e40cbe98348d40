/**
 * Content DynamoDB (here the emulator) refuses never blocks a partition, on the real broker and
 * emulator: on the commands topic it is a rejection with its code and a dead letter of the
 * original bytes; an event already on the events topic whose effect a read-model item cannot
 * hold (written by code older than the limits) is dead-lettered naming the consumer, the item
 * flagged, and the partition goes on.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { COMMAND_CODES, FUZZ_SEED, hostileOpen, openEnvelope } from '../unit/fuzz/arbitraries.ts';
import { checkCommand, type DeadLetterRecord, type ResultRecord } from '../../functions/core/wire.ts';
import { createProducer } from '../../functions/adapters/kafka/clients.ts';
import { createDocumentClient } from '../../functions/adapters/dynamodb/clients.ts';
import { CommandOutcomes } from '../../functions/adapters/dynamodb/command-outcomes.ts';
import { accountSummary } from '../../functions/projections/account-summary.ts';
import { getAccountSummary } from '../../functions/projections/account-summary-query.ts';
import { projectionRowKey } from '../../functions/event/ports.ts';
import { command, mskEvent, type RecordSpec } from '../support/msk.ts';
import { createTopics, readTopic, unique } from '../support/kafka.ts';
import { bothProcessors } from '../support/processors.ts';
import { MAX_AGGREGATE_ID_CHARS, MAX_COMMAND_ID_CHARS } from '../../functions/core/limits.ts';
import { rebuildDeps } from '../support/command-side.ts';
import { rebuildAggregates } from '../../functions/rebuild/rebuild-aggregates.ts';
import { rebuildProjection } from '../../functions/rebuild/rebuild-projection.ts';
import { TopicLog } from '../../functions/adapters/kafka/topic-log.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { triggerBatches } from '../support/event-side.ts';
import { accountEventRecord } from '../support/events.ts';

const sides = bothProcessors();

const nest = (depth: number): unknown => JSON.parse(`${'['.repeat(depth)}1${']'.repeat(depth)}`);

describe('the commands topic: content a store refuses is a rejection, and the partition keeps moving', () => {
  it('rejects each class with its code and a dead letter of the original bytes, and accepts the command behind each', async () => {
    const id = unique('acc');
    const topic = unique('cmds');
    const other = unique('acc');
    const long = '\u{1F600}'.repeat(129);
    const deposit = (metadata: Record<string, unknown>, data: Record<string, unknown> = { amount: 1 }) => ({
      key: id,
      value: { ...command(id, 'Deposit', data), metadata },
    });
    const bad: { name: string; code: string; record: Omit<RecordSpec, 'offset'> }[] = [
      {
        name: 'lone surrogate in the aggregateId',
        code: 'MalformedUnicode',
        record: { key: `${id}\ud800`, value: command(`${id}\ud800`, 'OpenAccount', { owner: 'Ada' }, { commandId: `${id}-surrogate` }) },
      },
      {
        name: 'lone surrogate in the owner',
        code: 'MalformedUnicode',
        record: { key: other, value: command(other, 'OpenAccount', { owner: 'A\udc00' }) },
      },
      {
        name: 'aggregateId of 129 four-byte characters (one past the limit)',
        code: 'IdTooLong',
        record: { key: long, value: command(long, 'OpenAccount', { owner: 'Ada' }) },
      },
      {
        name: 'commandId of 301 four-byte characters (one past the limit)',
        code: 'IdTooLong',
        record: { key: id, value: command(id, 'Deposit', { amount: 1 }, { commandId: '\u{1F600}'.repeat(301) }) },
      },
      { name: 'number below 1E-130', code: 'NumberOutOfRange', record: deposit({ x: 1e-200 }) },
      { name: 'number beyond 2^53-1', code: 'NumberOutOfRange', record: deposit({ x: 2 ** 60 }) },
      { name: 'nesting deeper than 32 levels', code: 'NestingTooDeep', record: deposit({ x: nest(31) }) },
      { name: 'an empty key', code: 'InvalidAttributeName', record: deposit({ '': 1 }) },
    ];
    const good = (n: number) => command(id, n === 0 ? 'OpenAccount' : 'Deposit', n === 0 ? { owner: 'Gil' } : { amount: n });
    const records: RecordSpec[] = [{ offset: 0, key: id, value: good(0) }];
    bad.forEach((b, i) => records.push({ ...b.record, offset: 2 * i + 1 }, { offset: 2 * i + 2, key: id, value: good(i + 1) }));
    const event = mskEvent(records, topic);
    const summary = await sides.command.processor()(event);

    expect(summary).toMatchObject({ accepted: bad.length + 1, deadLettered: bad.length, batchItemFailures: [] });
    expect((await sides.command.heads.get('account', id))?.version).toBe(bad.length + 1);
    const letters = (await sides.command.deadLetters()) as DeadLetterRecord[];
    bad.forEach((b, i) => {
      const offset = 2 * i + 1;
      const letter = letters.find((d) => d.source.topic === topic && d.source.offset === offset);
      expect(letter?.reason.code, b.name).toBe(b.code);
      const original = event.records[`${topic}-0`]?.find((r) => r.offset === offset);
      expect([letter?.key, letter?.value], b.name).toEqual([original?.key ?? null, original?.value ?? null]);
    });
    const results = (await sides.command.results()).filter(
      (r): r is Extract<ResultRecord, { status: 'rejected' }> => r.status === 'rejected',
    );
    // The rejection of a record whose aggregateId cannot be a key says so without it.
    const surrogate = results.find((r) => r.commandId === (bad[0]?.record.value as { commandId: string }).commandId);
    expect(surrogate).toMatchObject({ aggregateId: null, reason: { code: 'MalformedUnicode' } });
  });

  it('keeps outcomes whose ids can be keys, and leaves out those that cannot, instead of failing the batch', async () => {
    const id = unique('acc');
    const rejected = (commandId: string, aggregateId: string): ResultRecord => ({
      commandId,
      aggregateType: 'account',
      aggregateId,
      status: 'rejected',
      reason: { code: 'SkippedByOperator', message: 'skipped \ud800 by an operator' },
    });
    await sides.command.heads.keepResults(
      [
        { result: rejected('c-\ud800', id), at: Date.now() },
        { result: rejected('c-1', `${id}\udc00`), at: Date.now() },
        { result: rejected('c-2', id), at: Date.now() },
      ],
      60_000,
    );
    const outcomes = new CommandOutcomes(createDocumentClient(sides.command.dynamo), sides.command.heads.tableName);
    expect(await outcomes.outcome({ aggregateType: 'account', aggregateId: id, commandId: 'c-2' })).toMatchObject({
      status: 'rejected',
      reason: { code: 'SkippedByOperator', message: 'skipped \ufffd by an operator' },
    });
  });
});

describe('ids exactly at their limits, of four-byte characters, flow whole', () => {
  it('their head, events, read-model row and the reaction command derived from them', async () => {
    /** `prefix` padded with four-byte characters to exactly `chars` characters. */
    const atLimit = (prefix: string, chars: number): string => prefix + '\u{1F600}'.repeat(chars - [...prefix].length);
    const id = atLimit(unique('acc'), MAX_AGGREGATE_ID_CHARS);
    const commandId = (n: number) => atLimit(`${unique('c')}-${n}-`, MAX_COMMAND_ID_CHARS);
    const topic = unique('cmds');
    const commands = [
      command(id, 'OpenAccount', { owner: 'Ada' }, { commandId: commandId(1) }),
      command(id, 'Deposit', { amount: 500 }, { commandId: commandId(2) }),
      command(id, 'Withdraw', { amount: 450 }, { commandId: commandId(3) }),
    ];
    const summary = await sides.command.processor()(
      mskEvent(
        commands.map((value, offset) => ({ offset, key: id, value })),
        topic,
      ),
    );
    expect(summary).toMatchObject({ accepted: 3, deadLettered: 0, batchItemFailures: [] });
    expect((await sides.command.heads.get('account', id))?.version).toBe(3);

    const events = (await readTopic(sides.command.kafka, sides.command.topics.events)).filter((r) => r.key === id);
    expect(events.map((r) => (JSON.parse(r.value!) as { eventId: string }).eventId)).toEqual([1, 2, 3].map((v) => `account:${id}:${v}`));
    const side = await sides.event.processor()(triggerBatches(events, sides.command.topics.events, 10)[0]!);
    expect(side).toMatchObject({ events: 3, refused: 0, deadLettered: 0, halted: [] });
    expect(await getAccountSummary(sides.event.readModels, id)).toMatchObject({ balance: 50, version: 3 });
    const alerts = (await sides.event.commands()).filter((c) => c.aggregateId === id);
    expect(alerts.map((c) => c.type)).toEqual(['RaiseLowBalanceAlert']);
    expect(checkCommand(alerts[0])).toHaveProperty('ok');
  });
});

describe('the events topic: an event whose effect an item cannot hold is dead-lettered naming the consumer, and the partition goes on', () => {
  it('an owner that is not well-formed Unicode, written by older code: the row and checkpoint are flagged, later events applied', async () => {
    const id = unique('acc');
    const topic = unique('events');
    const admin = sides.event.kafka.admin();
    await admin.connect();
    await createTopics(admin, { [topic]: 1 });
    await admin.disconnect();
    const events = [
      accountEventRecord(id, 1, 'AccountOpened', { owner: 'Ada \ud800' }),
      accountEventRecord(id, 2, 'MoneyDeposited', { amount: 500, currency: 'EUR' }),
    ];
    const producer = createProducer(sides.event.kafka);
    await producer.connect();
    await producer.send({ topic, messages: events.map((e) => ({ key: id, value: JSON.stringify(e) })) });
    await producer.disconnect();
    const stored = await readTopic(sides.event.kafka, topic);
    const [batch] = triggerBatches(stored, topic, 10);

    const summary = await sides.event.processor()(batch!);

    // Two items see the opening: the summary row and the low-balance reaction's checkpoint (its state holds the owner).
    expect(summary).toMatchObject({ events: 2, refused: 2, halted: [] });
    const row = await sides.event.readModels.get(projectionRowKey(accountSummary.name, id));
    expect(row).toMatchObject({ versions: { [`account#${id}`]: 2 }, refusedCount: 1, refused: [{ version: 1, code: 'MalformedUnicode' }] });
    expect(await getAccountSummary(sides.event.readModels, id)).toMatchObject({ balance: 500, version: 2 });
    const letters = (await sides.event.deadLetters()).filter((d) => d.source.topic === topic);
    expect(letters.map((d) => [d.source.offset, d.code]).sort()).toEqual([
      [0, 'MalformedUnicode'],
      [0, 'MalformedUnicode'],
    ]);
    expect(letters.map((d) => d.message).join('\n')).toMatch(/projection account-summary.*refused event account:.*:1/);
    expect(letters[0]?.value).toBe(Buffer.from(stored[0]!.value!, 'utf8').toString('base64'));

    // Delivered again (the trigger retries after a crash): nothing is applied twice.
    expect(await sides.event.processor()(batch!)).toMatchObject({ applied: 0, refused: 0, duplicates: 4 });

    // A rebuild of the projection treats the event as the live side did: refused and flagged, not unusable.
    const eventLog = new TopicLog(sides.event.kafka, topic);
    const live = await sides.event.readModels.get(projectionRowKey(accountSummary.name, id));
    // Marked ready as the live handler marks a new table (one projection's rebuild refuses a table that lost its items).
    if ((await sides.event.readModels.getControl()) === undefined) await sides.event.readModels.putControl('ready', 0);
    const report = await rebuildProjection({
      aggregates,
      name: accountSummary.name,
      projections: [accountSummary],
      readModels: sides.event.readModels,
      eventLog,
      // The event trigger stands at the topic's end: the live side applied it all.
      trigger: { position: async () => (await eventLog.offsets()).end, starts: async () => (await eventLog.offsets()).start, groupId: 'g' },
    });
    expect(report).toMatchObject({ status: 'complete', eventsRead: 2, applied: 1, unusable: 0, refused: 1 });
    expect(await sides.event.readModels.get(projectionRowKey(accountSummary.name, id))).toMatchObject({
      data: live?.data,
      versions: live?.versions,
      refusedCount: 1,
      refused: [{ version: 1, code: 'MalformedUnicode' }],
    });
    await eventLog.close();
  });
});

describe('a bounded sample of arbitrary commands on the real broker and emulator', () => {
  it('each is refused at the edge with a precise code and a dead letter, or flows whole: its head, its events, its read-model row', async () => {
    const topic = unique('cmds');
    const runs = Number(process.env.FUZZ_RUNS ?? 24);
    const sample = fc
      .sample(hostileOpen, { seed: FUZZ_SEED, numRuns: runs })
      .map((c, n) => ({ ...c, aggregateId: `${n}-${c.aggregateId}` }));
    const records: RecordSpec[] = sample.map((c, offset) => ({
      offset,
      key: c.aggregateId,
      value: openEnvelope(c),
    }));
    const summary = await sides.command.processor()(mskEvent(records, topic));
    expect(summary.batchItemFailures).toEqual([]);
    const letters = ((await sides.command.deadLetters()) as DeadLetterRecord[]).filter((d) => d.source.topic === topic);
    const events = await readTopic(sides.command.kafka, sides.command.topics.events);
    for (const batch of triggerBatches(events, sides.command.topics.events, 500))
      expect((await sides.event.processor()(batch)).halted).toEqual([]);

    let flowed = 0;
    for (const [offset, c] of sample.entries()) {
      const letter = letters.find((d) => d.source.offset === offset);
      const head = await sides.command.heads.get('account', c.aggregateId).catch(() => undefined);
      if (head === undefined) {
        // Refused at the edge, with a precise code and a dead letter.
        const codes: readonly string[] = COMMAND_CODES;
        expect(codes, c.aggregateId).toContain(letter?.reason.code);
        continue;
      }
      flowed++;
      expect(head.version).toBe(1);
      expect(await getAccountSummary(sides.event.readModels, c.aggregateId)).toMatchObject({ owner: c.owner.trim(), version: 1 });
    }
    expect(flowed).toBeGreaterThan(0);
    expect(summary.accepted).toBe(flowed);

    // An event of older code whose owner no row can hold is on the same log: the rebuild keeps it, and every head comes back the same.
    const old = unique('acc');
    const producer = createProducer(sides.command.kafka);
    await producer.connect();
    await producer.send({
      topic: sides.command.topics.events,
      messages: [
        accountEventRecord(old, 1, 'AccountOpened', { owner: 'Ada \ud800' }),
        accountEventRecord(old, 2, 'MoneyDeposited', { amount: 500, currency: 'EUR' }),
      ].map((e) => ({ key: old, value: JSON.stringify(e) })),
    });
    await producer.disconnect();
    const before = await Promise.all(sample.map((c) => sides.command.heads.get('account', c.aggregateId).catch(() => undefined)));
    await rebuildAggregates(rebuildDeps(sides.command));
    const after = await Promise.all(sample.map((c) => sides.command.heads.get('account', c.aggregateId).catch(() => undefined)));
    expect(after.map((h) => h && [h.version, h.state])).toEqual(before.map((h) => h && [h.version, h.state]));
    expect(await sides.command.heads.get('account', old)).toMatchObject({
      version: 2,
      state: { status: 'open', owner: 'Ada \ud800', balance: 500 },
    });
  });
});
