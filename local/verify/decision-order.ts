/**
 * The order one target decided a reaction's commands in, from what the log shows. They arrive
 * in the order issued, and each commandId is decided once (its later copies are answered with
 * that outcome, a no-op's too). Two things break that. An operator's skip or discard of the
 * record holding one of them: the commands issued after it are decided, and the command itself
 * only when a redelivered event batch sends it again, after some of them. And a command that
 * crossed generations of the commands topic during a grow (a stale producer sent it to an older
 * generation, still draining or sealed and forwarding): nothing orders it against the commands
 * a current producer sent to the newest one (docs/DESIGN.md, "Growing the commands topic").
 */

/** What the log shows of one command's decision. */
export interface Decided {
  /** The target's version when it was decided: below its first event's, or that of an acceptance without events; undefined when nothing shows it. */
  readonly at: number | undefined;
  /** Whether it added events. */
  readonly added: boolean;
  /** Whether nothing shows it decided yet (no result, no event): still in flight. */
  readonly pending: boolean;
  /** Whether it was decided out of the order issued: an operator passed a record of it and another copy was decided, or it crossed generations. */
  readonly moved: boolean;
}

/** Whether `c` was decided before `d`: at a lower version, or at the same one when only `d` added events (after it the version is higher). */
const before = (c: Decided, d: Decided): boolean =>
  c.at !== undefined && d.at !== undefined && (c.at < d.at || (c.at === d.at && d.added && !c.added));

/**
 * `items` in the order issued, each moved command placed where the log shows it decided: before
 * the first of the commands issued before it that the log shows decided after it or not yet, or
 * else after the last of those issued after it that the log shows decided before it.
 */
export const decisionOrder = <T>(items: readonly T[], decided: (item: T) => Decided): T[] => {
  const order = [...items];
  for (const item of items) {
    const d = decided(item);
    if (!d.moved) continue;
    const from = order.indexOf(item);
    let to = order.findIndex((other, i) => i < from && (decided(other).pending || before(d, decided(other))));
    if (to < 0) {
      to = from;
      for (let i = from + 1; i < order.length; i++) if (before(decided(order[i] as T), d)) to = i;
    }
    order.splice(from, 1);
    order.splice(to, 0, item);
  }
  return order;
};
