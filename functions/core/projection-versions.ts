/**
 * Projection versions: where each version's rows live and which version serves reads. A
 * projection's version 1 keeps its rows under its name (as before versions existed); version
 * n > 1 under `<name>@v<n>` (`@` cannot occur in a name), so a new version is built beside
 * the one that serves. One item per versioned projection (`~projection`, its name) records
 * the version that serves reads and the catch-up of the version being built; one item per
 * events partition (`~version#<name>@v<n>`, `<topic>-<partition>`) records how far the
 * catch-up has applied that partition and whether the live event side has joined it
 * (rebuild/projection-version.ts, event/versions.ts). A build of the new version from nothing
 * gets an id (`build`, on the state item and on each marker written for it): a marker vouches
 * only for the build the state item names, so that one a run wrote after the table lost its
 * items (onto the empty table, which refuses no write of a new item) vouches for nothing. Pure:
 * reads go through the given port.
 */
import type { AnyProjection } from './projection.ts';

/** A projection's version (1 when it declares none). */
export const versionOf = (projection: Pick<AnyProjection, 'version'>): number => projection.version ?? 1;

/** Partition key of the rows of `name` at `version`. */
export const projectionPk = (name: string, version: number): string => (version <= 1 ? name : `${name}@v${version}`);

/** Key of a versioned projection's state item. */
export const versionStateKey = (name: string): { readonly pk: string; readonly sk: string } => ({ pk: '~projection', sk: name });

/** Partition key of the per-partition catch-up markers of `name` at `version`. */
export const versionMarkerPk = (name: string, version: number): string => `~version#${projectionPk(name, version)}`;

/** Key of the catch-up marker of one events partition (`topic-partition`). */
export const versionMarkerKey = (name: string, version: number, tp: string): { readonly pk: string; readonly sk: string } => ({
  pk: versionMarkerPk(name, version),
  sk: tp,
});

/** One line of a versioned projection's record: what happened and when. */
export interface VersionEvent {
  readonly at: string;
  readonly what: string;
}

/** How far a catch-up has come, as its last save left it. */
export interface CatchUpProgress {
  /** Events applied by the catch-up so far, and how many there are to the log's end as last read. */
  readonly eventsRead: number;
  readonly eventsTotal: number;
  /** Events per second over the run that saved it. */
  readonly ratePerSecond: number;
  /** Partitions the live event side applies the new version on (it joined them, or the catch-up had nothing left there). */
  readonly joined: number;
  readonly partitions: number;
  readonly updatedAt: string;
}

/** A versioned projection's state item. */
export interface ProjectionVersionState {
  /** The version that serves reads (and that the live side applies on every partition). */
  readonly active: number;
  /** The version being built beside it, until it serves. */
  readonly building?: number;
  /** The build under way of `building`: new at each start from nothing (absent: written before builds had ids). */
  readonly build?: string;
  readonly progress?: CatchUpProgress;
  /** The version whose rows a switch left to drop: a catch-up stopped between the switch and the drop resumes there. */
  readonly dropping?: number;
  /** What happened, oldest first: the record of builds, switches and drops. */
  readonly history: readonly VersionEvent[];
}

/** A partition's catch-up marker. */
export interface VersionMarker {
  /** The next offset the catch-up applies: everything before it is in the new version's rows. */
  readonly through: number;
  /** The offset from which the live event side applies the new version on this partition. */
  readonly joined?: number;
  /** The build it was written for (the state item's `build`). */
  readonly build?: string;
}

/**
 * The marker `data`, when it vouches for the rows of the build of `version` that `state` names;
 * undefined for none, or one of another build or of none under way (it outlived its rows).
 */
export const buildMarker = (state: ProjectionVersionState | undefined, version: number, data: unknown): VersionMarker | undefined => {
  const marker = data as VersionMarker | undefined;
  return state?.building === version && Number.isInteger(marker?.through) && marker?.build === state.build ? marker : undefined;
};

/** The versions of `name` the code registers, ascending. */
export const registeredVersions = (projections: readonly Pick<AnyProjection, 'name' | 'version'>[], name: string): number[] =>
  [...new Set(projections.filter((p) => p.name === name).map(versionOf))].sort((a, b) => a - b);

/** Whether `name` needs its state item read: more than one version registered, or one past version 1. */
export const isVersioned = (versions: readonly number[]): boolean => versions.length > 1 || (versions[0] ?? 1) > 1;

/** The state a stored item holds, or undefined. */
export const versionStateOf = (data: unknown): ProjectionVersionState | undefined =>
  typeof data === 'object' && data !== null && Number.isInteger((data as ProjectionVersionState).active)
    ? (data as ProjectionVersionState)
    : undefined;

/** The version serving reads: the state's, else the lowest the code registers. */
export const activeVersion = (state: ProjectionVersionState | undefined, versions: readonly number[]): number =>
  state?.active ?? versions[0] ?? 1;

/**
 * The partition key that reads of `name` read: its name when it has only version 1, else the
 * active version's (one consistent read of the state item).
 */
export const activeProjectionPk = async (
  table: { get(key: { pk: string; sk: string }): Promise<{ readonly data: unknown } | undefined> },
  projections: readonly Pick<AnyProjection, 'name' | 'version'>[],
  name: string,
): Promise<string> => {
  const versions = registeredVersions(projections, name);
  if (!isVersioned(versions)) return name;
  const state = versionStateOf((await table.get(versionStateKey(name)))?.data);
  return projectionPk(name, activeVersion(state, versions));
};
