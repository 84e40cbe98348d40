/**
 * Upcaster chains: how an event stored in an older shape is read as what the current code
 * knows. Each event carries the revision of its type's shape (on the wire; absent means 1).
 * A type's upcasters are keyed by the revision they read, 1, 2, … with no gap; its current
 * revision, the one its schema describes and the command side writes, is one past the last.
 * A type with upcasters and no schema is retired: its last upcaster reads it as another type.
 *
 * One stored event is one event to the current code, of its own type or another: the version
 * belongs to the stored record, and projections, reactions and the rebuild count versions
 * with no gap or repeat (a split or a dropped event would break that count). Pure.
 */
import type { AnyAggregate, EventAtRevision, Message, UpcastContext, Upcaster } from './aggregate.ts';
import { describeIssues } from './schema.ts';

/** Why a stored event cannot be read through its chain. */
export interface UpcastFault {
  /**
   * - `UnknownEventType`: neither a schema nor upcasters for the type;
   * - `UnknownRevision`: a revision past what this code reads (written by newer code);
   * - `UpcastFailed`: an upcaster threw, returned something that is not an event, skipped a
   *   revision, looped, or led to data its target schema refuses;
   * - `SchemaRefused`: stored at the current revision, with data its schema refuses. The
   *   command side validated the data against the schema of the code that wrote it, so this
   *   code's schema is not that one (older and stricter, or changed without a new revision).
   */
  readonly code: 'UnknownEventType' | 'UnknownRevision' | 'UpcastFailed' | 'SchemaRefused';
  readonly problem: string;
}

/** The event a stored event is to the current code, and whether upcasters changed it; or why it cannot be read. */
export type UpcastOutcome = { readonly event: Message; readonly upcast: boolean } | { readonly fault: UpcastFault };

type Chain = Readonly<Record<string, Upcaster>>;
type Schema = AnyAggregate['events'][string];

const own = <T>(record: Readonly<Record<string, T>> | undefined, key: string): T | undefined =>
  record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;

const chainOf = (aggregate: AnyAggregate, type: string): Chain | undefined => own(aggregate.upcasters, type);

const schemaOf = (aggregate: AnyAggregate, type: string): Schema | undefined => own(aggregate.events, type);

/** Per set of upcasters, what every read needs and never changes: the current revision per type, and the steps a chain may take. */
interface ChainFacts {
  readonly revisions: Map<string, number>;
  readonly maxSteps: number;
}
const NO_UPCASTERS = {};
const facts = new WeakMap<object, ChainFacts>();
/** Worked out once per aggregate's upcasters (readonly), not once per event read. */
const chainFacts = (aggregate: AnyAggregate): ChainFacts => {
  const upcasters = (aggregate.upcasters ?? NO_UPCASTERS) as Readonly<Record<string, Chain>>;
  let known = facts.get(upcasters);
  if (known === undefined) {
    // Each step uses one upcaster; more steps than upcasters means types upcast into each other.
    known = { revisions: new Map(), maxSteps: Object.values(upcasters).reduce((n, chain) => n + Object.keys(chain).length, 0) };
    facts.set(upcasters, known);
  }
  return known;
};

/** The revision `type` is written at now: one past its last upcaster, 1 without any. */
export const currentRevision = (aggregate: AnyAggregate, type: string): number => {
  const { revisions } = chainFacts(aggregate);
  let revision = revisions.get(type);
  if (revision === undefined) {
    revision = Object.keys(chainOf(aggregate, type) ?? {}).reduce((max, key) => Math.max(max, Number(key) + 1), 1);
    revisions.set(type, revision);
  }
  return revision;
};

/** Per event type an aggregate knows: its schema, its upcasters and its current revision. */
interface TypeFacts {
  readonly schema: Schema | undefined;
  readonly chain: Chain | undefined;
  readonly current: number;
}
const types = new WeakMap<AnyAggregate, Map<string, TypeFacts>>();
/**
 * Looked up once per aggregate and type, not once per event read (the aggregate is readonly);
 * undefined for a type it does not know, which is not kept (a log may name any number of them).
 */
const typeFacts = (aggregate: AnyAggregate, type: string): TypeFacts | undefined => {
  let byType = types.get(aggregate);
  if (byType === undefined) types.set(aggregate, (byType = new Map<string, TypeFacts>()));
  let known = byType.get(type);
  if (known === undefined) {
    const schema = schemaOf(aggregate, type);
    const chain = chainOf(aggregate, type);
    if (schema === undefined && chain === undefined) return undefined;
    known = { schema, chain, current: currentRevision(aggregate, type) };
    byType.set(type, known);
  }
  return known;
};

/** What is wrong with the aggregate's upcaster chains (empty when nothing): gaps, keys that are not revisions, non-functions. */
export const chainProblems = (aggregate: AnyAggregate): string[] => {
  const problems: string[] = [];
  for (const [type, chain] of Object.entries((aggregate.upcasters ?? {}) as Readonly<Record<string, unknown>>)) {
    if (typeof chain !== 'object' || chain === null) {
      problems.push(`${type}: its upcasters must be an object keyed by the revision each reads`);
      continue;
    }
    const keys = Object.keys(chain);
    const bad = keys.filter((k) => !/^[1-9][0-9]{0,8}$/.test(k));
    if (bad.length > 0)
      problems.push(
        `${type}: upcasters are keyed by the revision they read (1, 2, …), not ${bad.map((k) => JSON.stringify(k)).join(', ')}`,
      );
    else if (keys.length === 0) problems.push(`${type}: an empty chain (remove it: the type is then at revision 1)`);
    else {
      const last = Math.max(...keys.map(Number));
      const missing = Array.from({ length: last }, (_, i) => i + 1).filter((r) => !keys.includes(String(r)));
      if (missing.length > 0)
        problems.push(`${type}: no upcaster from revision ${missing.join(', ')} (a gap in the chain to revision ${last + 1})`);
    }
    const notFunctions = keys.filter((k) => typeof (chain as Record<string, unknown>)[k] !== 'function');
    if (notFunctions.length > 0) problems.push(`${type}: the upcaster from revision ${notFunctions.join(', ')} is not a function`);
  }
  return problems;
};

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isEventAtRevision = (value: unknown): value is EventAtRevision =>
  isRecord(value) &&
  typeof value.type === 'string' &&
  value.type !== '' &&
  Number.isSafeInteger(value.revision) &&
  (value.revision as number) >= 1 &&
  isRecord(value.data);

const named = (event: EventAtRevision): string => `${event.type} revision ${event.revision}`;

const shown = (value: unknown): string => {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
};

// Module functions, not closures made per event read: the rebuild reads every event through here.
const fault = (code: UpcastFault['code'], problem: string): UpcastOutcome => ({ fault: { code, problem } });
const via = (steps: number, stored: EventAtRevision, event: EventAtRevision): string =>
  steps === 0 ? '' : `upcast from ${named(stored)} into ${named(event)}: `;

/**
 * Reads `stored` through the chains of `aggregate` until it is at its type's current
 * revision, then validates it against that type's schema. Never throws: an upcaster that
 * throws or returns something unusable is an `UpcastFailed` fault, never a skip.
 */
export const upcastEvent = (aggregate: AnyAggregate, stored: EventAtRevision, context: UpcastContext): UpcastOutcome => {
  let event = stored;
  for (let steps = 0; ; steps++) {
    const known = typeFacts(aggregate, event.type);
    if (known === undefined)
      return fault(
        steps === 0 ? 'UnknownEventType' : 'UpcastFailed',
        `${via(steps, stored, event)}${aggregate.type} has no event ${JSON.stringify(event.type)}; known: ${Object.keys(aggregate.events).join(', ')}`,
      );
    const { schema, chain, current } = known;
    if (schema !== undefined && event.revision === current) {
      const validated = schema['~standard'].validate(event.data);
      if (validated instanceof Promise)
        return fault('SchemaRefused', `the schema of ${event.type} validates asynchronously; event schemas must validate synchronously`);
      if (validated.issues !== undefined)
        return steps === 0
          ? fault('SchemaRefused', `invalid ${event.type} data: ${describeIssues(validated.issues)}`)
          : fault(
              'UpcastFailed',
              `${via(steps, stored, event)}the data fails the ${event.type} schema: ${describeIssues(validated.issues)}`,
            );
      // The data as stored (or as upcast), not the schema's output: what the command side evolved.
      return { event: { type: event.type, data: event.data }, upcast: steps > 0 };
    }
    const upcaster = own(chain, String(event.revision));
    if (upcaster === undefined) {
      const known = schema === undefined ? current - 1 : current;
      return fault(
        steps === 0 ? 'UnknownRevision' : 'UpcastFailed',
        `${via(steps, stored, event)}this code reads ${event.type} up to revision ${known}${schema === undefined ? ' (the type is retired)' : ''}` +
          (steps === 0 ? '; a later revision was written by newer code' : ''),
      );
    }
    if (steps >= chainFacts(aggregate).maxSteps)
      return fault(
        'UpcastFailed',
        `from ${named(stored)}: the chain did not end after ${steps} upcasts (do types upcast into each other?)`,
      );
    let next: unknown;
    try {
      next = upcaster(event, context);
    } catch (error) {
      return fault('UpcastFailed', `the upcaster from ${named(event)} threw: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (!isEventAtRevision(next))
      return fault(
        'UpcastFailed',
        `the upcaster from ${named(event)} returned ${shown(next)}, not one { type, revision, data } with data an object`,
      );
    if (next.type === event.type && next.revision !== event.revision + 1)
      return fault(
        'UpcastFailed',
        `the upcaster from ${named(event)} returned ${named(next)}; within a type a step goes to revision ${event.revision + 1}`,
      );
    event = next;
  }
};
