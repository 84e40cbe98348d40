/**
 * Outcomes of commands as the aggregates table keeps them, for the command API: a head's
 * recent commands, the archive of accepted commandIds and the outcomes no head remembers
 * (head-item.ts has the layouts). Consistent reads, so an outcome the command side has
 * written is seen at once.
 */
import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ResultRecord } from '../../core/wire.ts';
import type { CommandRef, OutcomeReader } from '../../command-api/ports.ts';
import { batchGetAll } from './requests.ts';
import { aggregateKey } from '../../core/aggregate.ts';
import { answerTo, isCommand } from '../../heads/head.ts';
import { findInPages, pagesSince } from '../../heads/archive-pages.ts';
import {
  archivedFromItem,
  archivedIs,
  archiveKey,
  HEAD_OUTCOME_ATTRIBUTES,
  legacyArchiveKey,
  recentFromItem,
  resultFromItem,
  resultKey,
} from './aggregates-items.ts';
import { AggregatesTable } from './aggregates-table.ts';

/** What a result item holds beyond the head's outcome attributes. */
const RESULT_ATTRIBUTES = ['commandId', 'version', 'code', 'message', 'parked'] as const;

/** Reads outcomes and state of aggregates from the aggregates table. */
export class CommandOutcomes implements OutcomeReader {
  private readonly heads: AggregatesTable;

  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
  ) {
    this.heads = new AggregatesTable(doc, tableName);
  }

  /**
   * One consistent BatchGetItem of the head (its recent commands) and the command's kept
   * outcome; the archive (acceptances and rejections: the head's pages, its archive items) only where the head archived commands since `archivedSince`
   * and no acceptance was found. An acceptance wins over a rejection (a command re-sent after
   * a rejection may have been accepted since); else a rejection the head remembers (the first), else the kept one.
   */
  async outcome(ref: CommandRef, options: { readonly archivedSince?: number } = {}): Promise<ResultRecord | undefined> {
    const { aggregateType, aggregateId, commandId } = ref;
    const head = aggregateKey(aggregateType, aggregateId);
    const items = await batchGetAll(this.doc, this.tableName, [{ pk: head }, { pk: resultKey(aggregateType, aggregateId, commandId) }], 8, [
      ...HEAD_OUTCOME_ATTRIBUTES,
      ...RESULT_ATTRIBUTES,
    ]);
    const headItem = items.find((item) => item.pk === head);
    const resultItem = items.find((item) => item.pk !== head);
    const remembered = headItem === undefined ? undefined : recentFromItem(headItem);
    const found = [
      ...(remembered?.recent.filter(isCommand(commandId)).map((r) => answerTo(r.result, commandId)) ?? []),
      ...(resultItem === undefined
        ? []
        : [resultFromItem(aggregateType, aggregateId, commandId, resultItem)].filter((r) => r !== undefined)),
    ];
    const accepted = found.find((r) => r.status === 'accepted');
    if (accepted !== undefined) return accepted;
    if (remembered === undefined) return found[0];
    const since = options.archivedSince ?? 0;
    const [archived, pages] = await Promise.all([
      remembered.archivedUntil > 0 && remembered.archivedUntil >= since ? this.archiveItems(ref, remembered.legacyArchiveUntil) : [],
      this.heads.readPages(aggregateType, aggregateId, pagesSince(remembered.pages ?? [], since)),
    ]);
    const commands = [
      ...archived.filter((item) => archivedIs(item, ref)).map((item) => archivedFromItem(item, commandId)),
      ...[findInPages(pages, commandId)].filter((c) => c !== undefined),
    ];
    const command = commands.find((c) => c.rejected === undefined) ?? commands[0];
    if (command !== undefined) {
      if (command.rejected === undefined) return { commandId, aggregateType, aggregateId, status: 'accepted', version: command.version };
      // A rejection that left the head's recent window.
      if (found.every((r) => r.status === 'parked'))
        return { commandId, aggregateType, aggregateId, status: 'rejected', reason: command.rejected };
    }
    return found[0];
  }

  /** The command's archive items: under its fingerprint's key; also under its commandId's when the previous layout archived this aggregate's commands. */
  private archiveItems(ref: CommandRef, legacyArchiveUntil: number): Promise<Record<string, unknown>[]> {
    const { aggregateType, aggregateId, commandId } = ref;
    const key = archiveKey(aggregateType, aggregateId, commandId);
    return legacyArchiveUntil > 0
      ? batchGetAll(this.doc, this.tableName, [{ pk: key }, { pk: legacyArchiveKey(aggregateType, aggregateId, commandId) }], 8)
      : this.doc
          .send(new GetCommand({ TableName: this.tableName, Key: { pk: key }, ConsistentRead: true }))
          .then((out) => (out.Item === undefined ? [] : [out.Item]));
  }

  /** The aggregate's version and state, by consistent read of its head. */
  async state(aggregateType: string, aggregateId: string): Promise<{ readonly version: number; readonly state: unknown } | undefined> {
    const head = await this.heads.get(aggregateType, aggregateId);
    return head === undefined ? undefined : { version: head.version, state: head.state };
  }
}
