/**
 * Whether a command was handled before: by its source position (a redelivered record) or by
 * its commandId (a re-sent command). Pure; the answers come from the head's recent commands
 * and offsets and from the aggregate's archive of accepted commandIds.
 */
import type { TriggerRecord } from '../core/trigger-event.ts';
import type { CommandEnvelope, Reason, ResultRecord } from '../core/wire.ts';
import { answerTo, isCommand, nameOf, type ArchivedCommand, type RecentCommand } from './head.ts';

/** A command as dedupe sees it (command/decode.ts `IncomingCommand` is one): where it arrived, and whose it is. */
export interface ArrivedCommand {
  readonly record: Pick<TriggerRecord, 'offset' | 'timestamp'>;
  readonly envelope: Pick<CommandEnvelope, 'commandId' | 'aggregateType' | 'aggregateId'>;
}

/** What a command is, given what the aggregate remembers. */
export type Known =
  /** Handled before: answer with `result`; `remember` when it arrived at a new position (a re-send), so a redelivery of it gets the same. */
  | { readonly kind: 'duplicate'; readonly result: ResultRecord; readonly remember: boolean }
  /** Handled before, but its outcome is not kept, or the position holds another command: answer with this rejection, change nothing. */
  | { readonly kind: 'answered'; readonly reason: Reason }
  /** New: decide it. */
  | { readonly kind: 'new' };

/** What the aggregate remembers. */
export interface Memory {
  readonly recent: readonly RecentCommand[];
  readonly offsets: Readonly<Record<string, number>>;
  readonly archived: ReadonlyMap<string, ArchivedCommand>;
  readonly dedupeWindowMs: number;
}

/** The accepted result of `commandId` when the aggregate still recognises it, in its recent window or its archive. */
const accepted = (memory: Memory, incoming: ArrivedCommand): ResultRecord | undefined => {
  const { commandId, aggregateType, aggregateId } = incoming.envelope;
  const same = isCommand(commandId);
  const recent = memory.recent.find((r) => same(r) && r.result.status === 'accepted');
  if (recent !== undefined) return answerTo(recent.result, commandId);
  const archived = memory.archived.get(commandId);
  if (archived === undefined || archived.rejected !== undefined || incoming.record.timestamp - archived.at > memory.dedupeWindowMs)
    return undefined;
  return { commandId, aggregateType, aggregateId, status: 'accepted', version: archived.version };
};

/** Classifies `incoming`, which arrived at position key `tp`. */
export const classify = (memory: Memory, incoming: ArrivedCommand, tp: string): Known => {
  const { record, envelope } = incoming;
  const at = memory.recent.find((r) => r.tp === tp && r.offset === record.offset);
  if (at !== undefined) {
    if (isCommand(envelope.commandId)(at)) return { kind: 'duplicate', result: answerTo(at.result, envelope.commandId), remember: false };
    return {
      kind: 'answered',
      reason: {
        code: 'PositionReused',
        message:
          `${tp}@${record.offset} was handled for this aggregate as command ${nameOf(at.commandId)}, but now holds ${envelope.commandId}: ` +
          'the commands topic was recreated or its offsets rewritten without this table noticing; send the command again',
      },
    };
  }
  const seen = memory.offsets[tp];
  const original = accepted(memory, incoming);
  if (seen !== undefined && record.offset <= seen) {
    if (original !== undefined) return { kind: 'duplicate', result: original, remember: false };
    return {
      kind: 'answered',
      reason: {
        code: 'OutcomeNotRetained',
        message:
          `${tp}@${record.offset} was handled before (this aggregate has handled ${tp} up to offset ${seen}) and its outcome is no longer kept ` +
          '(a rejection, or an acceptance that changed nothing, after a restore or rebuild). Send it again with a new commandId to have it decided now',
      },
    };
  }
  if (original !== undefined) return { kind: 'duplicate', result: original, remember: true };
  return { kind: 'new' };
};
