/**
 * Reads of the `account-summary` read model: one account by id, or all of them. Consistent
 * reads, so a caller that has seen an event applied reads a row that includes it.
 */
import { projectionRowKey, type ReadModels } from '../event/ports.ts';
import { accountSummary, type AccountSummary } from './account-summary.ts';

/** The summary of one account, or undefined when no event of it has been applied yet. */
export const getAccountSummary = async (table: Pick<ReadModels, 'get'>, accountId: string): Promise<AccountSummary | undefined> =>
  (await table.get(projectionRowKey(accountSummary.name, accountId)))?.data as AccountSummary | undefined;

/** Every account's summary, in account id order (pages through the whole projection). */
export const listAccountSummaries = async (table: Pick<ReadModels, 'query'>): Promise<AccountSummary[]> =>
  (await table.query(accountSummary.name)).map(({ item }) => item.data as AccountSummary);
