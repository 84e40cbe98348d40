/**
 * The projection versions part of `kafka-aggregates status`: per versioned projection, the
 * version that serves reads and, while a new one is built beside it, how far its catch-up has
 * come (events applied of those to the log's end, partitions joined by the live side, rate and
 * the time to done at that rate), and the record of builds, switches and drops.
 */
import { composeOperator } from '../../functions/compose/operator.ts';
import { versionStateKey, versionStateOf, type ProjectionVersionState } from '../../functions/core/projection-versions.ts';

/** A versioned projection's state, by name. */
export interface VersionStatus {
  readonly name: string;
  readonly state: ProjectionVersionState;
}

/** Every versioned projection's state item in the read-models table, or the error that kept it from being read. */
export const readVersions = async (): Promise<{ versions: VersionStatus[] } | { error: string }> => {
  const operator = composeOperator('kafka-aggregates-status');
  try {
    const items = await operator.readModels.query(versionStateKey('').pk);
    return {
      versions: items.flatMap(({ key, item }) => {
        const state = versionStateOf(item.data);
        return state === undefined ? [] : [{ name: key.sk, state }];
      }),
    };
  } catch (error) {
    return { error: (error as Error).message };
  } finally {
    operator.close();
  }
};

/** `42s`, `3m05s`: a duration for humans. */
const duration = (seconds: number): string =>
  seconds < 60 ? `${Math.ceil(seconds)}s` : `${Math.floor(seconds / 60)}m${String(Math.ceil(seconds % 60)).padStart(2, '0')}s`;

/** The lines `status` prints for the versioned projections. */
export const versionLines = (versions: readonly VersionStatus[]): string[] =>
  versions.flatMap(({ name, state }) => {
    const head = `  ${name}: reads version ${state.active}`;
    const p = state.progress;
    if (state.building === undefined || p === undefined)
      return [
        `${head}${state.building === undefined ? '' : `; version ${state.building} waits for its catch-up to start`}`,
        ...history(state),
      ];
    const left = Math.max(0, p.eventsTotal - p.eventsRead);
    const eta = p.ratePerSecond > 0 ? `, about ${duration(left / p.ratePerSecond)} to go` : '';
    return [
      `${head}; building version ${state.building}: ${p.eventsRead} of ${p.eventsTotal} events applied (${left} to go), ` +
        `${p.joined} of ${p.partitions} partitions joined by the live side, ${p.ratePerSecond} events/s${eta} (as of ${p.updatedAt.slice(11, 19)})`,
      ...history(state),
    ];
  });

const history = (state: ProjectionVersionState): string[] => state.history.slice(-3).map((h) => `    ${h.at}  ${h.what}`);
