/**
 * check-deploy's question about projection versions: code about to be deployed that no longer
 * registers the version serving reads (a new version instead of beside it, or a rollback past a
 * switch) is refused with what reads would meet; code that keeps it passes.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import type { AnyProjection } from '../../../functions/core/projection.ts';
import { versionStateKey, type ProjectionVersionState } from '../../../functions/core/projection-versions.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../../functions/projections/account-summary-v2.ts';
import { checkDeploy, refused, type CheckDeployDeps } from '../../../functions/rebuild/check-deploy.ts';
import { servingVersions, versionProblems, type ServingVersion } from '../../../functions/rebuild/serving-versions.ts';
import { formatCheckDeploy } from '../../../local/cli/check-deploy.ts';

const v = (version: number): Pick<AnyProjection, 'name' | 'version'> => ({ name: 'account-summary', version });
const serving = (version: number, from: ServingVersion['from'] = 'state'): ServingVersion[] => [{ name: 'account-summary', version, from }];
const messages = (code: Pick<AnyProjection, 'name' | 'version'>[], now: ServingVersion[]) =>
  versionProblems(code, now).map((p) => p.message);

describe('versionProblems', () => {
  it('passes code that registers the serving version, alone or beside a newer or older one', () => {
    expect(messages([v(1)], serving(1, 'rows'))).toEqual([]);
    expect(messages([v(1), v(2)], serving(1, 'rows'))).toEqual([]);
    expect(messages([v(1), v(2)], serving(2))).toEqual([]);
    expect(messages([v(2), v(3)], serving(2))).toEqual([]);
    expect(messages([v(2)], serving(2))).toEqual([]);
    // Removing the projection altogether is not a version change.
    expect(messages([{ name: 'other' }], serving(2))).toEqual([]);
  });

  it('refuses a new version registered instead of the serving one: reads would switch to rows not built', () => {
    expect(messages([v(2)], serving(1, 'rows'))).toEqual([
      "account-summary: version 1 serves reads and this code does not register it (it registers version 2): reads would switch to version 2's rows before they are built (nothing, or rows the live side meets gaps in); keep version 1 registered beside version 2 until the catch-up switches reads to it, then remove it",
    ]);
  });

  it('refuses a new version without the serving one when a state item names it: the serving rows left to no code', () => {
    expect(messages([v(3)], serving(2))).toEqual([
      "account-summary: version 2 serves reads and this code does not register it (it registers version 3): reads would stay on version 2's rows, which no code would keep up to date until version 3 is built and serves; keep version 2 registered beside version 3 until the catch-up switches reads to it, then remove it",
    ]);
  });

  it('refuses a version lower than the serving one: reads would go back to rows dropped at the switch', () => {
    expect(messages([v(1)], serving(2))).toEqual([
      "account-summary: version 2 serves reads and this code does not register it (it registers version 1, lower): reads would go back to version 1's rows, dropped when version 2 took over (nothing, or rows the live side meets gaps in); keep version 2 registered",
    ]);
    expect(versionProblems([v(1), v(2)], serving(3))).toMatchObject([{ projection: 'account-summary', serving: 3, registered: [1, 2] }]);
    expect(messages([v(1), v(2)], serving(3))[0]).toMatch(/\(it registers versions 1 and 2, lower\): reads would stay on version 3's rows/);
  });
});

const write = (table: MemoryReadModels, pk: string, sk: string, data: unknown) =>
  table.write({ pk, sk }, { data, versions: {}, gaps: [], gapCount: 0 }, 0);
const state = (active: number): ProjectionVersionState => ({ active, history: [] });

describe('servingVersions', () => {
  it('reads the state item, else version 1 when rows are under the name and the code drops version 1', async () => {
    const table = new MemoryReadModels();
    expect(await servingVersions(table, [accountSummaryV2])).toEqual([]); // a new projection: nothing serves yet
    await write(table, 'account-summary', 'acc-1', { balance: 1 });
    expect(await servingVersions(table, [accountSummary, accountSummaryV2])).toEqual([]); // version 1 registered: nothing to ask
    expect(await servingVersions(table, [accountSummaryV2])).toEqual(serving(1, 'rows'));
    await write(table, versionStateKey('account-summary').pk, versionStateKey('account-summary').sk, state(2));
    expect(await servingVersions(table, [accountSummary])).toEqual(serving(2));
  });
});

describe('check-deploy over projection versions', () => {
  const deps = (readModels: MemoryReadModels, projections: readonly AnyProjection[]): CheckDeployDeps => ({
    aggregates: [],
    projections,
    reactions: [],
    eventLog: { topic: 'events' } as CheckDeployDeps['eventLog'], // --census-only reads no log
    heads: { scanAll: () => Promise.reject(new Error('not read')) },
    readModels,
    scratch: new MemoryReadModels(),
    triggerPosition: () => Promise.reject(new Error('not read')),
  });

  it('refuses, without reading the log, version 2 deployed instead of beside the version 1 that serves', async () => {
    const table = new MemoryReadModels();
    await write(table, 'account-summary', 'acc-1', { balance: 1 });
    const report = await checkDeploy(deps(table, [accountSummaryV2]), new Map(), { sampleEvery: 1, censusOnly: true });
    expect(report.versionProblems).toHaveLength(1);
    expect(refused(report)).toBe(true);
    expect(refused(report, true)).toBe(true); // --allow-changes is for changed rows, not for reads switched to nothing
    const lines = formatCheckDeploy(report, 5);
    expect(lines).toContain('projection versions: 1 serving version this code drops');
    expect(lines.at(-1)).toBe('check-deploy: REFUSED: this code drops the projection version serving reads: account-summary version 1');

    const beside = await checkDeploy(deps(table, [accountSummary, accountSummaryV2]), new Map(), { sampleEvery: 1, censusOnly: true });
    expect(beside.versionProblems).toEqual([]);
    expect(refused(beside)).toBe(false);
  });
});
