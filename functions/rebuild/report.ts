/**
 * A rebuild's report as a response: every list cut to its first items, so that the response
 * stays far below Lambda's 6 MB limit whatever the log held; what is cut goes elsewhere (the
 * log). Pure.
 */

/** Items of one list a report returns at most; the rest are logged. */
export const REPORT_ITEMS = 100;
/** Bytes (as JSON) all the returned list items of a report take at most. */
export const REPORT_BYTES = 256 * 1024;

/** A report as returned: each list cut to its first items, with `<list>Count` its full length. */
export type BoundedReport = Record<string, unknown>;

/**
 * Cuts every list of `report` to its first items (at most `maxItems` each, `maxBytes` of JSON
 * in all) and adds `<list>Count` with the full length and `truncated` naming the cut lists;
 * `leftOut` receives what was cut, list by list.
 */
export const boundReport = (
  report: object,
  leftOut: (list: string, items: readonly unknown[], firstIndex: number) => void,
  maxItems = REPORT_ITEMS,
  maxBytes = REPORT_BYTES,
): BoundedReport => {
  let budget = maxBytes;
  const bounded: BoundedReport = {};
  const truncated: string[] = [];
  for (const [name, value] of Object.entries(report)) {
    if (!Array.isArray(value)) {
      bounded[name] = value;
      continue;
    }
    const kept: unknown[] = [];
    for (const item of value.slice(0, maxItems)) {
      const size = new TextEncoder().encode(JSON.stringify(item) ?? 'null').length;
      if (size > budget) break;
      budget -= size;
      kept.push(item);
    }
    bounded[name] = kept;
    bounded[`${name}Count`] = value.length;
    if (kept.length < value.length) {
      truncated.push(name);
      leftOut(name, value.slice(kept.length), kept.length);
    }
  }
  if (truncated.length > 0) bounded.truncated = truncated;
  return bounded;
};
