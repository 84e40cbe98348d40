/**
 * The deployment's projections and reactions, checked against its aggregates once at start,
 * and indexed by what each consumes.
 */
import type { AnyAggregate } from '../core/aggregate.ts';
import type { AnyProjection } from '../core/projection.ts';
import type { AnyReaction } from '../core/reaction.ts';
import { registry as aggregateRegistry } from '../core/registry.ts';
import { MAX_NAME_CHARS } from '../core/limits.ts';
import { projectionPk, versionOf } from '../core/projection-versions.ts';
import { InvalidDefinitionError } from './errors.ts';

/** Projections and reactions by what they consume. */
export interface EventRegistry {
  readonly aggregates: ReadonlyMap<string, AnyAggregate>;
  /** The projections that apply events of this aggregate type and event type. */
  projectionsFor(aggregateType: string, eventType: string): readonly AnyProjection[];
  /** The reactions whose checkpoints follow this aggregate type. */
  reactionsFor(aggregateType: string): readonly AnyReaction[];
}

const NAME = /^[A-Za-z][A-Za-z0-9_.-]*$/;

const checkConsumes = (
  kind: string,
  definition: { readonly name: string; readonly consumes: Readonly<Record<string, readonly string[]>> },
  aggregates: ReadonlyMap<string, AnyAggregate>,
): void => {
  for (const [aggregateType, eventTypes] of Object.entries(definition.consumes)) {
    const aggregate = aggregates.get(aggregateType);
    if (aggregate === undefined)
      throw new InvalidDefinitionError(`${kind} ${definition.name} consumes unknown aggregate type ${aggregateType}`);
    const unknown = eventTypes.filter((t) => !Object.hasOwn(aggregate.events, t));
    if (unknown.length > 0)
      throw new InvalidDefinitionError(`${kind} ${definition.name}: ${aggregateType} has no event ${unknown.join(', ')}`);
  }
};

const checkNames = (kind: string, names: readonly string[], versions: readonly number[] = []): void => {
  const seen = new Set<string>();
  for (const [i, name] of names.entries()) {
    const version = versions[i] ?? 1;
    if (!Number.isSafeInteger(version) || version < 1)
      throw new InvalidDefinitionError(`${kind} ${name}: version ${String(version)} is not a whole number from 1`);
    if (!NAME.test(name)) throw new InvalidDefinitionError(`${kind} name ${JSON.stringify(name)} must match ${String(NAME)}`);
    // Part of item keys and of every commandId a reaction derives (core/limits.ts).
    if (name.length > MAX_NAME_CHARS) throw new InvalidDefinitionError(`${kind} name ${name} is longer than ${MAX_NAME_CHARS} characters`);
    // Versions of one projection live side by side (core/projection-versions.ts); one version twice is a mistake.
    const id = projectionPk(name, version);
    if (seen.has(id)) throw new InvalidDefinitionError(`${kind} ${name}${version > 1 ? ` version ${version}` : ''} is defined twice`);
    seen.add(id);
  }
};

/**
 * Indexes the definitions, refusing names that would break item keys, unknown aggregate or
 * event types, and a projection that reads only some event types of an aggregate while
 * detecting gaps (its rows would see version jumps that are not lost events).
 */
export const eventRegistry = (
  aggregateList: readonly AnyAggregate[],
  projections: readonly AnyProjection[],
  reactions: readonly AnyReaction[],
): EventRegistry => {
  const aggregates = aggregateRegistry(aggregateList);
  checkNames(
    'projection',
    projections.map((p) => p.name),
    projections.map(versionOf),
  );
  checkNames(
    'reaction',
    reactions.map((r) => r.name),
  );
  const byEvent = new Map<string, AnyProjection[]>();
  const byAggregate = new Map<string, AnyReaction[]>();
  for (const projection of projections) {
    checkConsumes('projection', projection, aggregates);
    if (projection.dedupe === 'per-partition' && (projection.onGap ?? 'ignore') !== 'ignore')
      throw new InvalidDefinitionError(
        `projection ${projection.name} dedupes per partition, so its rows do not know every aggregate's version and cannot see gaps: set onGap: 'ignore'`,
      );
    for (const [aggregateType, eventTypes] of Object.entries(projection.consumes as Readonly<Record<string, readonly string[]>>)) {
      const all = Object.keys((aggregates.get(aggregateType) as AnyAggregate).events);
      if (
        (projection.onGap ?? (projection.dedupe === 'per-partition' ? 'ignore' : 'halt')) !== 'ignore' &&
        all.some((t) => !eventTypes.includes(t))
      )
        throw new InvalidDefinitionError(
          `projection ${projection.name} reads only some events of ${aggregateType} (${eventTypes.join(', ')}), so its rows would see version jumps: ` +
            `list every event type (${all.join(', ')}) or set onGap: 'ignore'`,
        );
      for (const eventType of eventTypes) {
        const key = `${aggregateType}\u0000${eventType}`;
        byEvent.set(key, [...(byEvent.get(key) ?? []), projection]);
      }
    }
  }
  for (const reaction of reactions) {
    checkConsumes('reaction', reaction, aggregates);
    for (const aggregateType of Object.keys(reaction.consumes))
      byAggregate.set(aggregateType, [...(byAggregate.get(aggregateType) ?? []), reaction]);
  }
  return {
    aggregates,
    projectionsFor: (aggregateType, eventType) => byEvent.get(`${aggregateType}\u0000${eventType}`) ?? [],
    reactionsFor: (aggregateType) => byAggregate.get(aggregateType) ?? [],
  };
};
