/**
 * check-deploy's replay of the read models (check-deploy.ts): the sampled aggregates' events
 * below the event trigger's position applied by the event side's own applier into a scratch
 * store, to compare with the deployed rows. Once the events topic grew (more partitions, or a
 * new generation) an aggregate's events lie on more than one partition, read one after another:
 * a partition that halts at a gap waits, held from the gap on, while the others are read, and is
 * applied again with every chunk, as the live side retries its batch and the read-models rebuild
 * holds it (read-model-replay.ts); once the range is read, the missing versions that lie past the
 * trigger's position are folded in (a batch applied whose commit was lost). A gap left then is
 * the log's, which the live side halts at whatever code is deployed: listed apart, not a halt of
 * the code. Any other halt is the code's: its partition stops there.
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import { offsetKey } from '../core/generation-log.ts';
import type { LogReader, LogRecord, PartitionOffsets } from '../core/log.ts';
import type { AnyProjection } from '../core/projection.ts';
import type { AnyReaction } from '../core/reaction.ts';
import { triggerRecordOf } from '../core/trigger-event.ts';
import { haltError, type Halt } from '../event/halts.ts';
import type { ReadModels } from '../event/ports.ts';
import { createEventApplier } from '../event/process-batch.ts';
import { missingPastEnd } from './read-model-replay.ts';

/** Records held behind gaps at most; beyond, the partition's gap is taken as the log's and it stops there. */
const MAX_HELD = 100_000;

/** What the replay of the rows needs: the code, the log, and the scratch store it applies into. */
export interface DeployRowsDeps {
  readonly aggregates: readonly AnyAggregate[];
  readonly projections: readonly AnyProjection[];
  readonly reactions: readonly AnyReaction[];
  readonly eventLog: Pick<LogReader, 'offsets' | 'read' | 'topic'>;
  readonly scratch: ReadModels;
}

/** The rows' replay, fed chunk by chunk in log order. */
export interface DeployRows {
  /** Applies the chunk's records (readable, sampled, below the trigger's position), after those held at gaps. */
  apply(records: readonly LogRecord[]): Promise<void>;
  /** Once the range is read: applies what waits at gaps, with the missing versions past `upTo`; the gaps left, as messages. */
  finish(upTo: PartitionOffsets, readable: (record: LogRecord) => boolean): Promise<string[]>;
}

const keyOf = (r: { readonly topic?: string; readonly partition: number }) => offsetKey(r.topic, r.partition);

/** The rows' replay into `deps.scratch`; `onHalt` hears each halt of the code (not a gap) with its message. */
export const deployRows = (deps: DeployRowsDeps, onHalt: (message: string) => void): DeployRows => {
  const apply = createEventApplier({ ...deps, readModels: deps.scratch, publisher: { publish: () => Promise.resolve() } });
  const stopped = new Set<string>();
  const gapsLeft: string[] = [];
  let held: LogRecord[] = [];
  let gaps: Halt[] = [];
  const applyHeld = async (records: readonly LogRecord[]) => {
    const batch = [...held, ...records.filter((r) => !stopped.has(keyOf(r)))];
    if (batch.length === 0) return;
    const summary = await apply(batch.map((r) => triggerRecordOf(r.topic ?? deps.eventLog.topic, r)));
    for (const halt of summary.halted)
      if (halt.cause !== 'gap') {
        stopped.add(keyOf(halt.position));
        onHalt(haltError(halt).message);
      }
    gaps = summary.halted.filter((h) => h.cause === 'gap');
    held = batch.filter((r) => gaps.some((h) => keyOf(h.position) === keyOf(r) && r.offset >= h.position.offset));
    if (held.length <= MAX_HELD) return;
    for (const gap of gaps) stopped.add(keyOf(gap.position));
    gapsLeft.push(...gaps.map((h) => haltError(h).message));
    [held, gaps] = [[], []];
  };
  return {
    apply: (records) => (records.length === 0 && held.length === 0 ? Promise.resolve() : applyHeld(records)),
    async finish(upTo, readable) {
      const tried = new Set<string>();
      while (held.length > 0) {
        const before = held.length;
        await applyHeld([]);
        if (held.length < before) continue;
        const missing = (await missingPastEnd(deps.eventLog, upTo, gaps, held)).filter(
          (r) => readable(r) && !tried.has(`${keyOf(r)}@${r.offset}`),
        );
        if (missing.length === 0) break;
        for (const r of missing) tried.add(`${keyOf(r)}@${r.offset}`);
        await applyHeld(missing);
      }
      return [...gapsLeft, ...(held.length === 0 ? [] : gaps.map((h) => haltError(h).message))];
    },
  };
};
