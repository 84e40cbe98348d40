/**
 * The demo's scenario (e): a new projection version deployed while commands flow
 * (docs/CHANGING-EVENTS.md, "A new projection version without downtime"). check-deploy refuses
 * `account-summary` version 2 registered instead of version 1 and passes it beside it; the
 * demo's event trigger is moved onto code with both (local/demo/event-handler-v2.ts); the
 * catch-up builds version 2 from the start of the events topic while commands keep coming, and
 * `status` shows how far it has come; reads switch, version 1 is dropped on the record; and
 * check-deploy refuses a release with a broken upcaster.
 */
import type { Operator } from '../../functions/compose/operator.ts';
import { MemoryReadModels } from '../../functions/compose/operator.ts';
import { sleep } from '../../functions/core/async.ts';
import { activeProjectionPk, projectionPk, versionMarkerPk, versionStateKey } from '../../functions/core/projection-versions.ts';
import { triggerRecordOf, type TriggerRecord } from '../../functions/core/trigger-event.ts';
import { groups, topicName } from '../../functions/config.ts';
import { aggregates } from '../../functions/domain/index.ts';
import { createEventApplier } from '../../functions/event/process-batch.ts';
import { accountSummaryV2 } from '../../functions/projections/account-summary-v2.ts';
import { reactions } from '../../functions/reactions/index.ts';
import { catchUpVersions } from '../../functions/rebuild/projection-version.ts';
import { readVersions, versionLines } from '../cli/versions.ts';
import { check, say, type Demo, type Verdict } from '../demo-scenarios.ts';
import { brokenUpcaster, demoProjections } from './versions-code.ts';
import { checkDeployLines, sendRounds } from './versions-support.ts';

const NAME = accountSummaryV2.name;
const ACCOUNTS = 10;
const SEED_ROUNDS = 30;
/** Pause between the rounds of commands that flow during the catch-up. */
const FLOW_PAUSE_MS = 500;
/**
 * The demo's event batches take well under a second: the drop waits this long for one that read
 * the state before the switch (a deployment waits the event function's timeout).
 */
const DRAIN_MS = 2_000;

/** The rows of `pk`, by row id. */
const rowsOf = async (operator: Operator, pk: string) =>
  new Map((await operator.readModels.query(pk)).map(({ key, item }) => [key.sk, JSON.stringify(item.data)]));

/** Version 2's rows as a fresh fold of the whole events topic gives them (the event side's own applier, into memory). */
const freshFold = async (operator: Operator): Promise<Map<string, string>> => {
  const memory = new MemoryReadModels();
  const apply = createEventApplier({
    aggregates,
    projections: [accountSummaryV2],
    reactions: [],
    readModels: memory,
    publisher: { publish: () => Promise.resolve() },
  });
  const log = operator.log(topicName('events'));
  try {
    const { start, end } = await log.offsets();
    await log.read(start, end, async (chunk) => {
      const records: TriggerRecord[] = chunk.map((r) => triggerRecordOf(log.topic, r));
      await apply(records);
      return 'continue';
    });
  } finally {
    await log.close();
  }
  return new Map((await memory.query(projectionPk(NAME, 2))).map(({ key, item }) => [key.sk, JSON.stringify(item.data)]));
};

/** Waits until the demo's event trigger has handled the whole events topic. */
const eventSideCaughtUp = async (operator: Operator, timeoutMs: number): Promise<boolean> => {
  const topic = topicName('events');
  const log = operator.log(topic);
  try {
    for (const until = Date.now() + timeoutMs; Date.now() < until; await sleep(250)) {
      const [{ end }, at] = await Promise.all([log.offsets(), operator.positions(topic, groups().eventsTrigger)]);
      if (Object.entries(end).every(([p, e]) => (at.get(`${topic}-${p}`) ?? 0) >= e)) return true;
    }
    return false;
  } finally {
    await log.close();
  }
};

/** (e) A projection version deployed and switched while commands flow; check-deploy before it and after. */
export const projectionVersion = async (demo: Demo): Promise<Verdict> => {
  const { operator } = demo;
  const ids = Array.from({ length: ACCOUNTS }, (_, i) => demo.id(`e${i}`));
  say(`(e) A new projection version: account-summary version 2 built beside version 1 while commands flow`);
  const seedStart = Date.now();
  const seeded = await sendRounds(demo, ids, 0, SEED_ROUNDS);
  const seededSide = await eventSideCaughtUp(operator, 60_000);
  say(
    `    seeded ${ids.length} accounts with ${seeded.sent} commands (${seeded.decided} decided` +
      `${seededSide ? ', all applied by the event side' : ''}) in ${((Date.now() - seedStart) / 1000).toFixed(1)} s`,
  );
  const sample = ids[0] as string;
  const readRow = async () => {
    const pk = await activeProjectionPk(operator.readModels, demoProjections.beside, NAME);
    return { pk, row: (await operator.readModels.get({ pk, sk: sample }))?.data };
  };
  const before = await readRow();
  say(`    reads of ${sample} before: ${before.pk} ${JSON.stringify(before.row)}`);

  say('    $ check-deploy --census-only   (version 2 registered instead of version 1)');
  const instead = await checkDeployLines({ aggregates, projections: demoProjections.instead, reactions }, ['--census-only']);
  say('    $ check-deploy --census-only   (version 2 registered beside version 1)');
  const beside = await checkDeployLines({ aggregates, projections: demoProjections.beside, reactions }, ['--census-only']);

  say(`    deploying the event handler with versions 1 and 2 (the demo's event trigger moved onto ${demo.eventSide.entryV2})`);
  await demo.eventSide.deploy(demo.eventSide.entryV2);
  const reportsFrom = demo.eventSide.reports.length;
  let flowing = true;
  let round = SEED_ROUNDS;
  const flow = { sent: 0, decided: 0 };
  const flowDone = (async () => {
    while (flowing) {
      const r = await sendRounds(demo, ids, round++, 1);
      flow.sent += r.sent;
      flow.decided += r.decided;
      await sleep(FLOW_PAUSE_MS);
    }
  })();
  const eventLog = operator.log(topicName('events'));
  let catchingUp = true;
  let lastLine = '';
  const watched = (async () => {
    while (catchingUp) {
      const found = await readVersions();
      const line = 'versions' in found ? (versionLines(found.versions.filter((v) => v.name === NAME))[0] ?? '') : found.error;
      if (line !== lastLine && line.includes('building')) say(`    $ status   ${line.trim()}`);
      lastLine = line;
      await sleep(700);
    }
  })();
  const started = Date.now();
  const report = await catchUpVersions(
    {
      aggregates,
      projections: demoProjections.beside,
      readModels: operator.readModels,
      eventLog,
      drainMs: DRAIN_MS,
      log: (message, fields) => say(`    ${message} ${JSON.stringify(fields)}`),
    },
    { checkpointEvery: 250 },
  ).finally(async () => {
    catchingUp = false;
    await Promise.all([watched, eventLog.close()]);
  });
  const switchedAfter = Date.now() - started;
  const duringCatchUp = demo.eventSide.reports.slice(reportsFrom);
  const failedBatch = duringCatchUp.find((r) => r.outcome !== 'ok');
  if (failedBatch !== undefined) say(`    an event batch ${failedBatch.outcome}: ${failedBatch.error ?? '(no error)'}`);
  flowing = false;
  await flowDone;
  const caughtUp = await eventSideCaughtUp(operator, 30_000);
  const after = await readRow();
  say(`    reads of ${sample} after:  ${after.pk} ${JSON.stringify(after.row)}`);
  const found = await readVersions();
  const record = 'versions' in found ? (found.versions.find((v) => v.name === NAME)?.state.history ?? []) : [];
  say('    $ status');
  for (const line of 'versions' in found ? versionLines(found.versions.filter((v) => v.name === NAME)) : [found.error]) say(`    ${line}`);
  const [stored, folded, v1Rows] = await Promise.all([
    rowsOf(operator, projectionPk(NAME, 2)),
    freshFold(operator),
    rowsOf(operator, NAME),
  ]);
  const same = stored.size === folded.size && [...folded].every(([id, row]) => stored.get(id) === row);

  say('    $ check-deploy --sample 5 --limit 2   (a release whose upcaster to MoneyDeposited revision 3 forgets `currency`)');
  const broken = await checkDeployLines({ aggregates: brokenUpcaster, projections: demoProjections.beside, reactions }, [
    '--sample',
    '5',
    '--limit',
    '2',
  ]);
  const projection = report.projections.find((p) => p.name === NAME);
  return [
    check(
      seededSide && instead.code === 1 && beside.code === 0,
      'check-deploy refused version 2 instead of version 1 and passed it beside it',
    ),
    check(
      projection?.outcome === 'switched' && report.status === 'complete',
      `the catch-up applied ${projection?.eventsApplied ?? 0} events and switched reads after ${(switchedAfter / 1000).toFixed(1)} s`,
    ),
    check(
      duringCatchUp.length > 0 && duringCatchUp.every((r) => r.outcome === 'ok') && demo.eventSide.blocked().length === 0,
      `the live event side never halted: ${duringCatchUp.length} batches during the catch-up, all ok`,
    ),
    check(
      flow.sent > 0 && flow.decided === flow.sent && caughtUp,
      `${flow.sent} commands sent during the catch-up, every one decided, and the event side caught up with them`,
    ),
    check(
      before.pk === NAME && after.pk === projectionPk(NAME, 2) && (after.row as { deposited?: number }).deposited !== undefined,
      'reads moved from version 1 to version 2 (its rows hold deposited and withdrawn)',
    ),
    check(same, `version 2's ${stored.size} rows equal a fresh fold of the whole events topic`),
    check(v1Rows.size === 0 && record.some((e) => e.what.startsWith('dropped version 1')), "version 1's rows were dropped, on the record"),
    check(broken.code === 1 && broken.lines.some((l) => /unreadable: [1-9]/.test(l)), 'check-deploy refused the broken upcaster'),
  ].every(Boolean)
    ? 'passed'
    : 'failed';
};

/**
 * Puts the demo's read models back to version 1 when an earlier run switched them (the working
 * tree registers version 1 only): the version state, version 2's rows and markers go, and the
 * read models are rebuilt from the log. Runs before the triggers start.
 */
export const resetVersions = async (demo: Pick<Demo, 'operator' | 'rebuild'>): Promise<void> => {
  const { readModels } = demo.operator;
  if ((await readModels.get(versionStateKey(NAME))) === undefined) return;
  say(`An earlier demo run left ${NAME} on version 2: putting the demo's read models back to version 1 (rebuild --read-models).`);
  await readModels.delete(versionStateKey(NAME));
  for (const pk of [projectionPk(NAME, 2), versionMarkerPk(NAME, 2)]) await readModels.wipe(pk);
  await demo.rebuild.run({ readModels: true });
};
