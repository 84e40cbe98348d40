/**
 * Verify's look at the command side's parked aggregates: what waits in each, and any parked
 * command its head already remembers deciding (a double decision: it would be decided again
 * at the release).
 */
import { aggregateKey } from '../core/aggregate.ts';
import type { Reason } from '../core/wire.ts';
import { isCommand, type Head } from '../heads/head.ts';
import type { ParkedCommandsReader } from './ports.ts';

/** One parked aggregate as verify reports it. */
export interface ParkedReport {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly cause: Reason;
  readonly firstOffset: number;
  /** Records not yet finished with by a release or discard. */
  readonly waiting: number;
}

/** A parked command that its head remembers as decided from that very record. */
export interface DecidedWhileParked {
  readonly aggregateType: string;
  readonly aggregateId: string;
  readonly commandId: string;
  readonly offset: number;
  readonly version: number;
}

const commandIdOf = (value: string | null | undefined): string | undefined => {
  if (value == null) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, 'base64').toString('utf8'));
    const id = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>).commandId : undefined;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
};

/**
 * The command side's parks, and the records still waiting in them that their head's recent
 * window holds as decided from the same partition and offset. A re-sent commandId parked
 * after its first decision is a record of its own (another offset) and is not one of them;
 * commands a head keeps only in its archive are not looked at.
 */
export const verifyParks = async (
  parks: ParkedCommandsReader,
  heads: readonly Head[],
): Promise<{ parked: ParkedReport[]; decided: DecidedWhileParked[] }> => {
  const byKey = new Map(heads.map((h) => [aggregateKey(h.aggregateType, h.aggregateId), h]));
  const parked: ParkedReport[] = [];
  const decided: DecidedWhileParked[] = [];
  for (const p of await parks.list()) {
    if (p.side !== 'command') continue;
    const { aggregateType, aggregateId } = p;
    parked.push({ aggregateType, aggregateId, cause: p.cause, firstOffset: p.firstOffset, waiting: p.count - p.done });
    const head = byKey.get(aggregateKey(aggregateType, aggregateId));
    if (head === undefined || head.recent.length === 0 || p.done >= p.count) continue;
    for (const { record } of await parks.read(aggregateType, aggregateId, p.done + 1, p.count)) {
      const commandId = commandIdOf(record.value);
      if (commandId === undefined) continue;
      const same = isCommand(commandId);
      const tp = `${record.topic}-${record.partition}`;
      const hit = head.recent.find((r) => same(r) && r.offset === record.offset && (r.tp === tp || r.tp.startsWith(`${tp}~`)));
      if (hit !== undefined) decided.push({ aggregateType, aggregateId, commandId, offset: record.offset, version: head.version });
    }
  }
  return { parked, decided };
};
