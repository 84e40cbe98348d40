/**
 * What a command batch goes by before it decides: the control item's facts (a rebuild in
 * progress, a table new or behind its log, a table restored or copied from another), read
 * from the control item on a container's first batch and whenever a partition's checkpoint
 * stamp is not the one the container last went by (heads/stamp.ts); otherwise from the stamps
 * alone, which the batch's read of its checkpoints brings anyway.
 */
import { RebuildInProgressError, TableBehindLogError, type ControlRecord } from '../control/control.ts';
import type { HeadsSnapshot, HeadsStore } from '../heads/ports.ts';
import { checkStampsAgainst, controlStamp } from '../heads/stamp.ts';
import { generationName, splitGeneration } from '../core/generations.ts';
import { forwardedFrom } from '../core/forwarded-from.ts';
import type { CommandLog, EventsTopicState } from './ports.ts';

/** What the gate reads besides the table: whether the events topic is empty, and the commands topic's later generations. */
export interface ControlGateDeps {
  readonly heads: HeadsStore;
  readonly eventLog: EventsTopicState;
  readonly commandLog?: Pick<CommandLog, 'ends' | 'sample'>;
  /** The newest generation of the commands topic (process-batch.ts). @default - the first only */
  readonly newestCommandsTopic?: () => string;
}

/** The control facts a batch is decided under. */
export interface BatchControl {
  readonly control: ControlRecord;
  /** The table was created by this batch, so no partition can be behind it. */
  readonly fresh: boolean;
  /** The stamp the batch's checkpoint writes carry. */
  readonly stamp: string;
}

/** The control facts of one container's batches (forget them after any failure). */
export class ControlGate {
  /** The control item and stamp the last batch went by; undefined until one is read. */
  private known: { readonly control: ControlRecord; readonly stamp: string } | undefined;
  /** The table's identity, described once per container (again after any failure). */
  private identity: string | undefined;

  constructor(private readonly deps: ControlGateDeps) {}

  /** Whether the batch's read must bring the control item (no stamp can stand in for it yet). */
  get readsControl(): boolean {
    return this.known === undefined;
  }

  /** Forgets what was known: a failed batch may have met another table, or a rebuild. */
  forget(): void {
    this.known = undefined;
    this.identity = undefined;
  }

  /**
   * The control facts for a batch over partitions `tps`, from `snapshot`; `withControl` says
   * whether that read brought the control item (what `readsControl` said before it). Passed,
   * not looked up again: a batch failing elsewhere may `forget` in between, and a snapshot
   * read without the control item must never stand for a table without one. `parked`: how
   * many aggregates the park index the batch read before the snapshot holds (policy `park`).
   */
  async check(snapshot: HeadsSnapshot, tps: readonly string[], withControl: boolean, parked = 0): Promise<BatchControl> {
    const known = this.known;
    const stamps = tps.map((tp) => snapshot.stamps.get(tp));
    if (known !== undefined && stamps.every((s) => s === known.stamp)) return { ...known, fresh: false };
    let control = withControl ? snapshot.control : await this.deps.heads.getControl();
    if (control === undefined) {
      checkStampsAgainst(control, stamps);
      // A new table, or one that lost its items: it may start empty only if the log is empty
      // too. A container deciding beside this one may have made it ready and published since
      // the read above; it writes the control item before its first event, so ask again.
      if (!(await this.deps.eventLog.isEmpty())) control = (await this.deps.heads.getControl()) ?? throwBehind(this.deps.heads.tableName);
      // Parks without a control item: a table restored from before it, the parks carried over
      // (docs/OPERATIONS.md, "Restoring the aggregates table"). Parked commands cause no events;
      // taken for new, its checkpoints would number the commands topic's lives from 1 again,
      // and a new life's command would pass for a redelivery of a parked one at its offset.
      else if (parked > 0) control = (await this.deps.heads.getControl()) ?? throwBehind(this.deps.heads.tableName, PARKED_DETAIL);
      // A forward in the commands topic: a partition was sealed in a table that had a control item
      // (a batch forwards only after its own made one). Restored from before, this one lost the
      // seal, and the forward's original, delivered again, would be decided in place as well.
      else if (await this.forwarded())
        control = (await this.deps.heads.getControl()) ?? throwBehind(this.deps.heads.tableName, FORWARDED_DETAIL);
    }
    if (control?.status === 'rebuilding') throw new RebuildInProgressError(control.epoch);
    let ready: ControlRecord;
    if (control === undefined) {
      ready = { status: 'ready', epoch: 0, table: await this.ownIdentity() };
      await this.deps.heads.putControl(ready, undefined);
    } else {
      // A copy's stamps may name a rebuild its control item never saw: it is behind its log, not rebuilding.
      ready = await this.checkTable(control);
      checkStampsAgainst(control, stamps);
    }
    this.known = { control: ready, stamp: controlStamp('ready', ready.epoch, await this.ownIdentity()) };
    return { ...this.known, fresh: control === undefined };
  }

  /** Whether a generation of the commands topic after the first holds a forwarded command (core/forwarded-from.ts). */
  private async forwarded(): Promise<boolean> {
    const newest = this.deps.newestCommandsTopic?.();
    if (newest === undefined || this.deps.commandLog === undefined) return false;
    const { base, index } = splitGeneration(newest);
    const later = Array.from({ length: index }, (_, i) => generationName(base, i + 1));
    return (await forwardedFrom(this.deps.commandLog, later)).size > 0;
  }

  private async ownIdentity(): Promise<string> {
    return (this.identity ??= await this.deps.heads.identity());
  }

  /**
   * A control item written in another table: this one holds a restore or a copy of it. Its
   * heads may be older than its checkpoints (a copy made during traffic takes each item at
   * another moment) or the next batches may line up with a checkpoint of the past, so
   * decisions could repeat or contradict the log: it is behind its log until the rebuild.
   */
  private async checkTable(control: ControlRecord): Promise<ControlRecord> {
    let table = await this.ownIdentity();
    if (control.table === table) return control;
    // Described before the table was recreated under its name (an emulator restarted empty): ask again.
    this.identity = undefined;
    table = await this.ownIdentity();
    if (control.table === table) return control;
    if (control.table !== undefined)
      throw new TableBehindLogError(
        this.deps.heads.tableName,
        `its items were restored or copied from another table (${control.table}): its heads may be older than its checkpoints`,
      );
    // Written before control items named their table: this one is taken as its own.
    await this.deps.heads.putControl({ ...control, table }, control);
    return { ...control, table };
  }
}

const PARKED_DETAIL = 'it has no control item, but holds parked aggregates';
const FORWARDED_DETAIL =
  'it has no control item, but the commands topic holds commands forwarded from a sealed generation (the rebuild seals it again)';

const throwBehind = (tableName: string, detail?: string): never => {
  throw new TableBehindLogError(tableName, detail);
};
