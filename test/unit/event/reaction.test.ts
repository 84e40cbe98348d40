import { describe, expect, it } from 'vitest';
import { commandEnvelopeSchema } from '../../../functions/core/wire.ts';
import { reactionCommandEnvelope, reactionCommandId, type ReactionCommand } from '../../../functions/core/reaction.ts';
import { accountEvent, withdrawn } from './events.ts';

const raise: ReactionCommand = {
  aggregateType: 'alert',
  aggregateId: 'acc-1',
  type: 'RaiseLowBalanceAlert',
  data: { balance: 5, threshold: 10, sourceVersion: 3 },
};

describe('reaction commandIds', () => {
  it('derives the commandId from the reaction, the event id and the command index', () => {
    expect(reactionCommandId('low-balance-alert', 'account:acc-1:3', 0)).toBe('low-balance-alert:account:acc-1:3:0');
    expect(reactionCommandId('low-balance-alert', 'account:acc-1:3', 1)).toBe('low-balance-alert:account:acc-1:3:1');
  });

  it('builds the same command record for the same event however often it is built', () => {
    const { event } = accountEvent('acc-1', 3, withdrawn(5));
    expect(reactionCommandEnvelope('r', event, raise, 0)).toStrictEqual(reactionCommandEnvelope('r', event, raise, 0));
  });

  it('builds a command record the command side accepts, linked to its cause', () => {
    const { event } = accountEvent('acc-1', 3, withdrawn(5));
    const envelope = reactionCommandEnvelope('r', { ...event, metadata: { correlationId: 'corr-9' } }, raise, 0);
    expect(commandEnvelopeSchema.safeParse(envelope).success).toBe(true);
    expect(envelope).toMatchObject({
      commandId: 'r:account:acc-1:3:0',
      aggregateType: 'alert',
      aggregateId: 'acc-1',
      correlationId: 'corr-9',
      causationId: 'account:acc-1:3',
      metadata: { reaction: 'r' },
    });
  });

  it("carries the event's own correlationId, which wins over metadata", () => {
    const { event } = accountEvent('acc-1', 3, withdrawn(5));
    const envelope = reactionCommandEnvelope('r', { ...event, correlationId: 'corr-1', metadata: { correlationId: 'old' } }, raise, 0);
    expect(envelope).toMatchObject({ correlationId: 'corr-1', causationId: 'account:acc-1:3' });
  });

  it('correlates with the causing command when the event has no correlationId', () => {
    const { event } = accountEvent('acc-1', 3, withdrawn(5));
    expect(reactionCommandEnvelope('r', event, raise, 0)).toMatchObject({ correlationId: 'cmd-acc-1-3' });
  });
});
