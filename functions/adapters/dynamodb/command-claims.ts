/**
 * What each commandId sent through the command API carried (its content's digest), kept in
 * the aggregates table for the dedupe window, so that the same commandId with other content
 * is refused (functions/command-api/post-command.ts). One conditional put per POST that names
 * its commandId; the command side neither reads nor writes these items.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { Claim, CommandClaims, CommandRef } from '../../command-api/ports.ts';
import { claimKey } from './aggregates-items.ts';

/** Claims of commandIds in the aggregates table, expiring (DynamoDB TTL) after `windowMs`. */
export class DynamoCommandClaims implements CommandClaims {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    readonly tableName: string,
    private readonly windowMs: number,
  ) {}

  /** Puts the claim unless one is there; a claim already there is returned (the condition's ALL_OLD). */
  async claim(ref: CommandRef, claim: Claim): Promise<Claim | undefined> {
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.tableName,
          Item: {
            pk: claimKey(ref.aggregateType, ref.aggregateId, ref.commandId),
            // The key joins ids that may hold `#`: the item says whose it is.
            aggregateId: ref.aggregateId,
            commandId: ref.commandId,
            digest: claim.digest,
            type: claim.type,
            at: claim.at,
            expiresAt: Math.ceil((claim.at + this.windowMs) / 1000),
          },
          ConditionExpression: 'attribute_not_exists(pk)',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
      );
      return undefined;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException) || error.Item === undefined) throw error;
      const old = unmarshall(error.Item);
      // Another command's claim under a key that reads the same (ids holding `#`): not this one's.
      if (old.aggregateId !== ref.aggregateId || old.commandId !== ref.commandId) return undefined;
      return { digest: String(old.digest), type: String(old.type), at: Number(old.at) };
    }
  }
}
