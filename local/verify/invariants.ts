/**
 * The invariant checker, pure: given what the events and results topics hold and what the
 * tables hold, lists every violation of the framework's guarantees with the aggregate and
 * versions concerned. No I/O here (history.ts reads the topics and tables), so tests can feed
 * it broken histories and the chaos run and `kafka-aggregates verify` share it. It knows no
 * domain: the aggregates, the projection whose rows it checks and the reactions whose
 * commands it checks come in its options.
 */
import { checkAggregateRules, checkEvents, type Found } from './check-events.ts';
import { checkEventsWithoutResults, checkParked, checkResults, commandsOfEvents } from './check-results.ts';
import { checkReactions, type ReactionCounts } from './check-reactions.ts';
import { checkHeads, checkSummaries } from './check-tables.ts';
import type { CheckOptions, CheckReport, History, ViolationKind } from './model.ts';

export type * from './model.ts';
export { VIOLATION_KINDS } from './model.ts';
export { canonicalJson } from './check-events.ts';

/** Checks a history; see ViolationKind for what is looked at. */
export const checkHistory = (history: History, options: CheckOptions): CheckReport => {
  const quiescent = options.quiescent ?? false;
  const events = checkEvents(history.events, options.aggregates);
  const found: Found[] = [events, checkAggregateRules(events.ordered, options.aggregates)];
  found.push(
    history.heads === undefined
      ? { violations: [], notes: ['heads not checked: no aggregates table'] }
      : checkHeads(history.heads, events.fold, quiescent),
  );
  found.push(
    options.readModel === undefined
      ? { violations: [], notes: ['read models not checked: no projection given'] }
      : history.summaries === undefined
        ? { violations: [], notes: [`${options.readModel.name} not checked: no read-models table`] }
        : checkSummaries(options.readModel, history.summaries, events.ordered, quiescent, history.eventParked),
  );
  let duplicateResults = 0;
  let commandsWithResult = 0;
  let reactionCounts: ReactionCounts = { reactionCommands: 0, reactionDuplicates: 0, reactionTargets: 0 };
  if (history.results === undefined) found.push({ violations: [], notes: ['results not checked: results topic not read'] });
  else {
    const commands = commandsOfEvents(events.ordered);
    const results = checkResults(history.results, events, commands, new Set(options.acceptsWithoutEvents ?? []));
    ({ duplicateResults, commandsWithResult } = results);
    found.push(
      results,
      checkEventsWithoutResults(history, options, events.ordered, commands, results.accepted),
      checkParked(history, options),
    );
    if (options.reactions === undefined) found.push({ violations: [], notes: ['reactions not checked: none given'] });
    else {
      // A reaction's command must have its outcome once results can no longer be in flight (as an event its result).
      const settledBefore = history.resultsComplete === false ? undefined : (options.settledBefore ?? (quiescent ? '9999' : undefined));
      const reactions = checkReactions(
        options.reactions,
        options.aggregates,
        events.ordered,
        history.results,
        commands,
        (occurredAt) => settledBefore !== undefined && occurredAt < settledBefore,
        quiescent,
        history.unfired ?? new Set(),
        history.crossed ?? new Set(),
      );
      reactionCounts = reactions.counts;
      found.push(reactions);
    }
  }

  const violations = found.flatMap((f) => f.violations);
  const byKind: Partial<Record<ViolationKind, number>> = {};
  for (const v of violations) byKind[v.kind] = (byKind[v.kind] ?? 0) + 1;
  return {
    counts: {
      eventRecords: history.events.length,
      distinctEvents: [...events.byAggregate.values()].reduce((n, e) => n + e.versions.size, 0),
      duplicateEvents: events.duplicateEvents,
      aggregates: events.byAggregate.size,
      resultRecords: history.results?.length ?? 0,
      commandsWithResult,
      duplicateResults,
      heads: history.heads?.length ?? 0,
      summaryRows: history.summaries?.length ?? 0,
      lagging: found.reduce((n, f) => n + (f.lagging ?? 0), 0),
      ...reactionCounts,
    },
    violations,
    byKind,
    notes: found.flatMap((f) => f.notes ?? []),
  };
};
