/**
 * Reads of the `account-summary` read model: one account by id, or all of them. Consistent
 * reads, so a caller that has seen an event applied reads a row that includes it. They read
 * the version that serves (core/projection-versions.ts) among the versions `registered`: the
 * deployment's projections unless told otherwise.
 */
import type { AnyProjection } from '../core/projection.ts';
import { activeProjectionPk } from '../core/projection-versions.ts';
import { projectionRowKey, type ReadModels } from '../event/ports.ts';
import { accountSummary, type AccountSummary } from './account-summary.ts';
import { projections } from './index.ts';

/** The summary of one account, or undefined when no event of it has been applied yet. */
export const getAccountSummary = async (
  table: Pick<ReadModels, 'get'>,
  accountId: string,
  registered: readonly AnyProjection[] = projections,
): Promise<AccountSummary | undefined> =>
  (await table.get(projectionRowKey(await activeProjectionPk(table, registered, accountSummary.name), accountId)))?.data as
    AccountSummary | undefined;

/** Every account's summary, in account id order (pages through the whole projection). */
export const listAccountSummaries = async (
  table: Pick<ReadModels, 'query' | 'get'>,
  registered: readonly AnyProjection[] = projections,
): Promise<AccountSummary[]> =>
  (await table.query(await activeProjectionPk(table, registered, accountSummary.name))).map(({ item }) => item.data as AccountSummary);
