/**
 * The markers of a projection version's catch-up (projection-version.ts), one per partition:
 * how far the catch-up has applied it (`through`) and where the live side joined it (`joined`).
 * A pass reads them once, and writes each over the revision it read.
 */
import { buildMarker, versionMarkerKey, versionMarkerPk, type VersionMarker } from '../core/projection-versions.ts';
import { RevisionConflictError, type ReadModels } from '../event/ports.ts';
import type { StateItem } from './version-state.ts';

/** A marker as read, with the revision a write over it expects. */
interface Read {
  readonly marker: VersionMarker | undefined;
  readonly revision: number;
}

/** A pass's markers by topic-partition, and the write of one (`join` records the live side's start if none is). */
export interface MarkerBook {
  readonly markers: Map<string, Read>;
  readonly putMarker: (tp: string, through: number, join?: boolean) => Promise<void>;
}

/** A marker of another build counts as none; its revision is kept for the write over it. */
const markerOf = (state: StateItem, to: number, item: { data: unknown; revision: number }): Read => ({
  marker: buildMarker(state.get(), to, item.data),
  revision: item.revision,
});

/** Reads the markers of `name`'s version `to`; `build` is the state item's, written into each marker put. */
export const readMarkers = async (
  readModels: ReadModels,
  name: string,
  to: number,
  state: StateItem,
  build: string | undefined,
): Promise<MarkerBook> => {
  const markers = new Map((await readModels.query(versionMarkerPk(name, to))).map(({ key, item }) => [key.sk, markerOf(state, to, item)]));
  const putMarker = async (tp: string, through: number, join = false): Promise<void> => {
    for (;;) {
      const found = markers.get(tp);
      const joined = found?.marker?.joined ?? (join ? through : undefined);
      const marker: VersionMarker = {
        through: Math.max(through, found?.marker?.through ?? 0),
        ...(joined === undefined ? {} : { joined }),
        ...(build === undefined ? {} : { build }),
      };
      try {
        await readModels.write(versionMarkerKey(name, to, tp), { data: marker, versions: {}, gaps: [], gapCount: 0 }, found?.revision ?? 0);
        markers.set(tp, { marker, revision: (found?.revision ?? 0) + 1 });
        return;
      } catch (error) {
        // The live side joined it meanwhile: keep its `joined`, write `through` again.
        if (!(error instanceof RevisionConflictError) || error.current === undefined) throw error;
        markers.set(tp, markerOf(state, to, error.current));
      }
    }
  };
  return { markers, putMarker };
};
