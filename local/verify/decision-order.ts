/**
 * The order one target decided a reaction's commands in, from what the log shows. They arrive
 * in the order issued, and each commandId is decided once (its later copies are answered with
 * that outcome, a no-op's too). An operator's skip or discard of the record holding one of them
 * breaks that: the commands issued after it are decided, and the command itself only when a
 * redelivered event batch sends it again, after some of them.
 */

/** What the log shows of one command's decision. */
export interface Decided {
  /** The target's version when it was decided: below its first event's, or that of an acceptance without events; undefined when nothing shows it. */
  readonly at: number | undefined;
  /** Whether it added events. */
  readonly added: boolean;
  /** Whether an operator passed a record of it and another copy was decided. */
  readonly moved: boolean;
}

/** Whether `c` was decided before `d`: at a lower version, or at the same one when only `d` added events (after it the version is higher). */
const before = (c: Decided, d: Decided): boolean =>
  c.at !== undefined && d.at !== undefined && (c.at < d.at || (c.at === d.at && d.added && !c.added));

/**
 * `items` in the order issued, each command passed at one record and decided from another copy
 * moved after the last of the commands issued after it that the log shows decided before it.
 */
export const decisionOrder = <T>(items: readonly T[], decided: (item: T) => Decided): T[] => {
  const order = [...items];
  for (const item of items) {
    const d = decided(item);
    if (!d.moved) continue;
    const from = order.indexOf(item);
    let to = from;
    for (let i = from + 1; i < order.length; i++) if (before(decided(order[i] as T), d)) to = i;
    order.splice(from, 1);
    order.splice(to, 0, item);
  }
  return order;
};
