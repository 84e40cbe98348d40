/**
 * The state item of a versioned projection as a catch-up run keeps it
 * (core/projection-versions.ts): read once, then written conditionally on the revision read,
 * so that two runs never both think they moved it; and the state of a build started from
 * nothing, by the catch-up or by a read-models rebuild that wipes the version's rows.
 */
import { versionStateKey, versionStateOf, type ProjectionVersionState, type VersionEvent } from '../core/projection-versions.ts';
import type { ReadModels } from '../event/ports.ts';

/** The state item as read, and as this run writes it. */
export interface StateItem {
  get(): ProjectionVersionState | undefined;
  put(next: ProjectionVersionState): Promise<void>;
}

/** The state item of `name` and its revision, by consistent read. */
export const readState = async (readModels: Pick<ReadModels, 'get'>, name: string) => {
  const item = await readModels.get(versionStateKey(name));
  return { state: versionStateOf(item?.data), revision: item?.revision ?? 0 };
};

/** The state item of `name`, read now; each `put` is conditional on the revision this run last saw. */
export const stateItem = async (readModels: Pick<ReadModels, 'get' | 'write'>, name: string): Promise<StateItem> => {
  let { state, revision } = await readState(readModels, name);
  return {
    get: () => state,
    put: async (next) => {
      await readModels.write(versionStateKey(name), { data: next, versions: {}, gaps: [], gapCount: 0 }, revision);
      revision++;
      state = next;
    },
  };
};

/** One line of the record, stamped now. */
export const entry = (what: string): VersionEvent => ({ at: new Date().toISOString(), what });

/** The state of a build of `to` beside `from` from nothing: a new `build`, which no marker written before carries. */
export const newBuild = (state: ProjectionVersionState | undefined, from: number, to: number): ProjectionVersionState => ({
  ...(state?.dropping === undefined ? {} : { dropping: state.dropping }),
  active: from,
  building: to,
  build: globalThis.crypto.randomUUID(),
  history: state?.building === to ? state.history : [...(state?.history ?? []), entry(`building version ${to} beside version ${from}`)],
});
