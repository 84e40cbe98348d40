/**
 * The test kit shipped with the public surface (functions/index.ts): given / when / then for
 * aggregates (decider.ts), projections and reactions (read-models.ts), in the style of a
 * decider specification. Framework-neutral: failures are `node:assert` errors, which every
 * test runner shows with a diff. Like the command side, it refuses data that is not JSON.
 */
export { FIXED_NOW, given, givenStored, raw, stored, type Then, type UncheckedCommand } from './decider.ts';
export { eventOf, historyOf, projectionSpec, reactionSpec, type ProjectionThen, type ReactionThen } from './read-models.ts';
export { jsonProblem } from './json.ts';
