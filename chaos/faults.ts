/**
 * The fault plan of a chaos run: which fault to inject at which named point, seeded so a run
 * can be replayed, and counted by kind. It lives on `globalThis`, so the chaos handler module
 * that the emulated trigger imports sees the plan the run installed, however it was loaded.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Random } from './random.ts';

/** Faults injected inside a command handler invocation. */
export type InvocationFault =
  /** The DynamoDB commit is done; the publisher throws before sending anything. */
  | 'crash-after-commit'
  /** Events are sent, then the publisher throws: results and watermarks are not. */
  | 'crash-mid-publish'
  /** The batch is fully handled, then the handler throws: the trigger redelivers it. */
  | 'crash-before-offset-commit'
  /** The same batch is handed to the processor twice in a row. */
  | 'duplicate-delivery'
  /** The same batch is processed by two processors at once (two invocations on one partition). */
  | 'racing-invocations';

/** Faults injected inside an event handler invocation: each makes the trigger deliver the batch's reactions' events again. */
export type EventInvocationFault =
  /** The reactions' commands are sent, then the publisher throws: no checkpoint is written, the batch comes again. */
  | 'event-crash-after-publish'
  /** The batch is fully applied, then the handler throws: the trigger redelivers it. */
  | 'event-crash-before-offset-commit'
  /** The same batch is applied twice in a row. */
  | 'event-duplicate-delivery'
  /** The same batch is applied by two processors at once, each with its own producer (one loses the checkpoints' write race). */
  | 'event-racing-invocations';

/** Every kind of fault a chaos run counts. */
export type FaultKind =
  | InvocationFault
  | EventInvocationFault
  /** A DynamoDB request refused with ProvisionedThroughputExceededException (the SDK retries it). */
  | 'throttled-request'
  /** A burst of throttling long enough for the SDK's retries to give up: the batch fails. */
  | 'throttle-storm'
  /** The Kafka broker stopped and started mid-run. */
  | 'broker-restart'
  /** The DynamoDB emulator restarted: every table lost. */
  | 'emulator-restart'
  /** The chaos run's tables deleted and recreated (the emulator restart, for a shared emulator). */
  | 'table-loss'
  /** Commands with metadata of 215–235 KB that do not compress, several in one batch: heads that do not fit one write, events published in chunks. */
  | 'large-metadata'
  /** The runtime's connections to DynamoDB cut (its proxy refuses them) for longer than the old retry budget; the data stays. */
  | 'dynamodb-outage'
  /** The Kafka broker stopped, then started again with its data, for longer than the old retry budget. */
  | 'kafka-outage'
  /** The commands topic deleted and created again, drained first as an operator would. */
  | 'topic-recreated'
  /** `kafka-aggregates rebuild` run as a child process while commands keep arriving (the lock alone holds them). */
  | 'cli-rebuild'
  /** The aggregates table replaced by an older copy of itself; the run, as the operator, rebuilds once commands are held. */
  | 'table-restored'
  /** The runtime process, the broker and the emulator killed with SIGKILL, then brought back by npm start's startup path. */
  | 'hard-kill'
  /** account-summary version 2 deployed beside version 1 under load: caught up, switched to, version 1 dropped (chaos/versions.ts). */
  | 'projection-version';

/** Kinds in report order. */
export const FAULT_KINDS: readonly FaultKind[] = [
  'crash-after-commit',
  'crash-mid-publish',
  'crash-before-offset-commit',
  'duplicate-delivery',
  'racing-invocations',
  'event-crash-after-publish',
  'event-crash-before-offset-commit',
  'event-duplicate-delivery',
  'event-racing-invocations',
  'throttled-request',
  'throttle-storm',
  'broker-restart',
  'emulator-restart',
  'table-loss',
  'large-metadata',
  'dynamodb-outage',
  'kafka-outage',
  'topic-recreated',
  'cli-rebuild',
  'table-restored',
  'hard-kill',
  'projection-version',
];

/** What the chaos handlers see happen, not inject: a batch whose events went out in more than one produce request. */
export type Observation =
  | 'publish-in-chunks'
  /** A live event batch halted on a gap while account-summary version 2 was deployed (what a version switch must never cause). */
  | 'version-switch-gap';

/** An injected crash: the handler fails as a Lambda whose sandbox died would. */
export class InjectedFault extends Error {
  override readonly name = 'InjectedFault';
  constructor(readonly kind: FaultKind) {
    super(`injected fault: ${kind}`);
  }
}

/** How often faults happen. */
export interface FaultRates {
  /** Share of command handler invocations that get one invocation fault, and of event handler invocations. @default 0.3 */
  readonly invocation: number;
  /** Share of DynamoDB requests throttled once. @default 0.02 */
  readonly throttle: number;
  /** Share of DynamoDB requests that start a throttling storm of 1–3 s. @default 0.002 */
  readonly storm: number;
}

const INVOCATION_FAULTS: Readonly<Record<InvocationFault, number>> = {
  'crash-after-commit': 1,
  'crash-mid-publish': 1,
  'crash-before-offset-commit': 1,
  'duplicate-delivery': 1,
  'racing-invocations': 1,
};

const EVENT_INVOCATION_FAULTS: Readonly<Record<EventInvocationFault, number>> = {
  'event-crash-after-publish': 1,
  'event-crash-before-offset-commit': 1,
  'event-duplicate-delivery': 1,
  'event-racing-invocations': 1,
};

/** One handler's invocation faults: every kind once, in a seeded order, before the random draws, so a short run still meets each. */
class InvocationDraws<K extends string> {
  private readonly firsts: K[];

  constructor(
    private readonly random: Random,
    private readonly weights: Readonly<Record<K, number>>,
  ) {
    this.firsts = (Object.keys(weights) as K[])
      .map((kind) => ({ kind, order: random.next() }))
      .sort((a, b) => a.order - b.order)
      .map((k) => k.kind);
  }

  next(rate: number): K | undefined {
    if (!this.random.chance(rate)) return undefined;
    return this.firsts.shift() ?? this.random.weighted(this.weights);
  }
}

/** Seeded decisions and counts. Separate streams for each handler's invocations and for requests, so one does not shift another. */
export class FaultPlan {
  readonly counts = new Map<FaultKind | Observation, number>();
  /** False once the run drains: no new fault is injected. */
  active = true;
  private readonly invocations: InvocationDraws<InvocationFault>;
  private readonly requests: Random;
  private readonly eventInvocations: InvocationDraws<EventInvocationFault>;
  private stormUntil = 0;

  constructor(
    readonly seed: number,
    readonly rates: FaultRates = { invocation: 0.3, throttle: 0.02, storm: 0.002 },
    /** Told of every count, e.g. to pass it on to the process that runs the chaos. */
    private readonly onCount: (kind: FaultKind | Observation) => void = () => undefined,
  ) {
    const root = new Random(seed);
    this.invocations = new InvocationDraws(root.fork(1), INVOCATION_FAULTS);
    this.requests = root.fork(2);
    this.eventInvocations = new InvocationDraws(root.fork(4), EVENT_INVOCATION_FAULTS);
  }

  /** The fault for the next command handler invocation, if any. */
  nextInvocationFault(): InvocationFault | undefined {
    return this.active ? this.invocations.next(this.rates.invocation) : undefined;
  }

  /** The fault for the next event handler invocation, if any. */
  nextEventFault(): EventInvocationFault | undefined {
    return this.active ? this.eventInvocations.next(this.rates.invocation) : undefined;
  }

  /** True when the next DynamoDB request is to be throttled. */
  throttleRequest(now = Date.now()): boolean {
    if (!this.active) return false;
    if (now < this.stormUntil) return true;
    if (this.requests.chance(this.rates.storm)) {
      this.stormUntil = now + this.requests.int(1000, 3000);
      this.count('throttle-storm');
      return true;
    }
    return this.requests.chance(this.rates.throttle);
  }

  count(kind: FaultKind | Observation): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
    this.onCount(kind);
  }
}

const KEY = Symbol.for('kafka-aggregates.chaos.fault-plan');
const store = globalThis as { [KEY]?: FaultPlan };

/** Makes `plan` the one the chaos handlers consult (undefined: no faults). */
export const installPlan = (plan: FaultPlan | undefined): void => {
  store[KEY] = plan;
};

/** The plan the run installed, if any. */
export const currentPlan = (): FaultPlan | undefined => store[KEY];

/**
 * Throttles some of the client's requests as DynamoDB does: an error named
 * ProvisionedThroughputExceededException, thrown below the SDK's retry middleware, so the SDK
 * retries it with backoff and gives up after its attempts, failing the batch.
 */
export const throttleRequests = (client: DynamoDBClient): void => {
  client.middlewareStack.add(
    (next) => async (args) => {
      const plan = currentPlan();
      if (plan?.throttleRequest() === true) {
        plan.count('throttled-request');
        throw Object.assign(new Error('Throughput exceeds the current capacity of your table (injected)'), {
          name: 'ProvisionedThroughputExceededException',
          $fault: 'client',
          $metadata: { httpStatusCode: 400 },
        });
      }
      return next(args);
    },
    { step: 'deserialize', name: 'chaosThrottle' },
  );
};
