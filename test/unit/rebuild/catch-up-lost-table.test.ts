/**
 * A catch-up run whose table lost its items between its rows and its markers (simulator seed
 * 79829 of every kind): the run applied an event to version 2's row, the table lost its items,
 * and the run wrote its markers onto the empty table, saying version 2 held what went with it.
 * The next run found no state item, started the build again, trusted the markers, switched at
 * once, and the live side halted on version 2's first event left: a gap for ever.
 */
import { describe, expect, it } from 'vitest';
import { MemoryReadModels } from '../../../functions/adapters/memory/read-models.ts';
import { MemoryTopicLog } from '../../../functions/adapters/memory/topic-log.ts';
import { projectionPk, versionMarkerKey } from '../../../functions/core/projection-versions.ts';
import { aggregates } from '../../../functions/domain/index.ts';
import { accountSummary } from '../../../functions/projections/account-summary.ts';
import { accountSummaryV2 } from '../../../functions/projections/account-summary-v2.ts';
import { catchUpVersions } from '../../../functions/rebuild/projection-version.ts';
import { command } from '../../support/msk.ts';
import { MemorySystem } from '../../support/memory-system.ts';

const item = (data: unknown) => ({ data, versions: {}, gaps: [], gapCount: 0 });

describe('the catch-up of a projection version', () => {
  it('starts a build from nothing: markers found without the state item are not trusted', async () => {
    const sys = new MemorySystem();
    await sys.deliver(sys.send([command('acc-1', 'OpenAccount', { owner: 'Ann' }), command('acc-1', 'Deposit', { amount: 5 })]));
    const readModels = new MemoryReadModels();
    // What the lost table left: a marker through the log's end, no state item, no row of version 2.
    await readModels.write(versionMarkerKey('account-summary', 2, 'events-0'), item({ through: 2 }), 0);

    const report = await catchUpVersions(
      { aggregates, projections: [accountSummary, accountSummaryV2], readModels, eventLog: new MemoryTopicLog(sys.cluster, 'events') },
      { passPauseMs: 1 },
    );
    expect(report.projections[0]).toMatchObject({ outcome: 'switched' });
    const row = await readModels.get({ pk: projectionPk('account-summary', 2), sk: 'acc-1' });
    expect(row?.versions).toEqual({ 'account#acc-1': 2 });
  });
});
