/**
 * A question of `check-deploy` about projection versions (core/projection-versions.ts): does the
 * code about to be deployed still register the version of each projection that serves reads?
 * Code that declares a new version without the serving one would switch reads at once to rows
 * not built yet (the live side meeting gaps in them), or leave the serving rows to no code;
 * code that registers only lower versions (a rollback past a switch) would read rows dropped at
 * the switch. Neither can be undone by the catch-up, so the deploy is refused before it. Nor may
 * it leave a version whose catch-up has not finished (not registering it, or registering a newer
 * one, which the catch-up would build instead): its half-built rows and markers would stay, and
 * a later deploy of that version would resume from them though nothing kept them up to date.
 */
import type { AnyProjection } from '../core/projection.ts';
import { activeVersion, isVersioned, registeredVersions, versionStateKey, versionStateOf } from '../core/projection-versions.ts';
import type { ReadModels } from '../event/ports.ts';

/** The version of a projection that serves reads now, as the deployed tables say. */
export interface ServingVersion {
  readonly name: string;
  readonly version: number;
  /** `state`: the projection's state item names it; `rows`: no state item, and rows under the name (version 1). */
  readonly from: 'state' | 'rows';
  /** The version being built beside it, its catch-up not finished (the state item's `building`). */
  readonly building?: number;
}

/** A projection whose serving version this code drops, or whose version half built it abandons. */
export interface VersionProblem {
  readonly kind: 'drops-serving' | 'abandons-building';
  readonly projection: string;
  readonly serving: number;
  /** The version half built that the code abandons (`abandons-building`). */
  readonly building?: number;
  readonly registered: readonly number[];
  /** What would go wrong, and what to keep. */
  readonly message: string;
}

const listed = (versions: readonly number[]): string =>
  versions.length === 1 ? `version ${versions[0]}` : `versions ${versions.slice(0, -1).join(', ')} and ${versions.at(-1)}`;

/** A version half built that the code would leave: not registered, or passed by a newer one. */
const abandoned = (name: string, serving: number, building: number, registered: readonly number[]): string => {
  const newest = registered.at(-1) as number;
  const head = `${name}: version ${building} is being built beside version ${serving}, its catch-up not finished,`;
  return newest > building
    ? `${head} and this code registers version ${newest} past it: the catch-up would build version ${newest} instead and leave ` +
        `version ${building}'s rows and markers half built; keep version ${building} the newest until it serves reads, then deploy version ${newest}`
    : `${head} and this code does not register it (it registers ${listed(registered)}): its rows and markers would be left half built, ` +
        `and a later deploy of version ${building} would resume from them though nothing kept them up to date; ` +
        `keep version ${building} registered until the catch-up switches reads to it`;
};

/**
 * The serving versions `code` drops, each with what reads would then meet, and the versions half
 * built that it would abandon (pure).
 */
export const versionProblems = (
  code: readonly Pick<AnyProjection, 'name' | 'version'>[],
  serving: readonly ServingVersion[],
): VersionProblem[] => {
  const problems: VersionProblem[] = [];
  for (const { name, version, from, building } of serving) {
    const registered = registeredVersions(code, name);
    // A projection the code no longer registers at all is a removal, not a version change.
    if (registered.length === 0) continue;
    const newest = registered.at(-1) as number;
    if (registered.includes(version)) {
      if (building !== undefined && building > version && newest !== building)
        problems.push({
          kind: 'abandons-building',
          projection: name,
          serving: version,
          building,
          registered,
          message: abandoned(name, version, building, registered),
        });
      continue;
    }
    const lower = newest < version;
    // Where reads would go under this code (core/projection-versions.ts, activeProjectionPk).
    const readsAt = isVersioned(registered)
      ? activeVersion(from === 'state' ? { active: version, history: [] } : undefined, registered)
      : 1;
    const meets =
      readsAt === version
        ? `reads would stay on version ${version}'s rows, which no code would keep up to date until version ${newest} is built and serves`
        : readsAt < version
          ? `reads would go back to version ${readsAt}'s rows, dropped when version ${version} took over (nothing, or rows the live side meets gaps in)`
          : `reads would switch to version ${readsAt}'s rows before they are built (nothing, or rows the live side meets gaps in)`;
    const keep = lower
      ? `keep version ${version} registered`
      : `keep version ${version} registered beside version ${newest} until the catch-up switches reads to it, then remove it`;
    problems.push({
      kind: 'drops-serving',
      projection: name,
      serving: version,
      registered,
      message:
        `${name}: version ${version} serves reads and this code does not register it ` +
        `(it registers ${listed(registered)}${lower ? ', lower' : ''}): ${meets}; ${keep}`,
    });
  }
  return problems;
};

/**
 * The versions serving reads for the projections `code` registers: each state item's active
 * version, and version 1 for a projection without one whose rows are under its name (read only
 * when the code does not register version 1: one query of those rows).
 */
export const servingVersions = async (
  readModels: Pick<ReadModels, 'get' | 'query'>,
  code: readonly Pick<AnyProjection, 'name' | 'version'>[],
): Promise<ServingVersion[]> => {
  const serving: ServingVersion[] = [];
  for (const name of new Set(code.map((p) => p.name))) {
    const state = versionStateOf((await readModels.get(versionStateKey(name)))?.data);
    if (state !== undefined)
      serving.push({
        name,
        version: state.active,
        from: 'state',
        ...(state.building !== undefined && state.building > state.active ? { building: state.building } : {}),
      });
    else if (!registeredVersions(code, name).includes(1) && (await readModels.query(name)).length > 0)
      serving.push({ name, version: 1, from: 'rows' });
  }
  return serving;
};
