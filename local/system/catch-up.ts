/**
 * How the local system brings a held side in step with the events topic: the snapshot
 * rebuild for the aggregates table, the read-models rebuild for the event side, and the
 * tables created again when the emulator came back without them. Each is tried again until
 * it succeeds (a dependency that goes away blocks, it never ends the system), its side held
 * meanwhile and let go after.
 */
import type { Kafka } from 'kafkajs';
import type { composeRebuild } from '../../functions/compose/rebuild.ts';
import type { Progress } from '../../functions/rebuild/rebuild-aggregates.ts';
import { provision } from '../provision.ts';
import type { Triggers } from '../trigger/trigger.ts';
import { aggregatesReadiness, readModelsReadiness } from './readiness.ts';

/** `[rebuild] …` progress lines, at most one every two seconds while reading. */
const progressLine = (log: (line: string) => void, what: string): ((p: Progress) => void) => {
  let lastSaid = 0;
  return (p) => {
    if (p.phase === 'reading' && Date.now() - lastSaid < 2_000) return;
    lastSaid = Date.now();
    log(`[rebuild] ${what} ${p.phase}: ${p.eventsRead.toLocaleString('en')} of ${p.eventsTotal.toLocaleString('en')} events`);
  };
};

/** Runs `attempt` until it succeeds or the startup is cancelled, waiting 1 s doubling up to 30 s between tries. */
const untilDone = async (what: string, log: (line: string) => void, cancelled: () => boolean, attempt: () => Promise<void>) => {
  for (let wait = 1_000; ; wait = Math.min(30_000, wait * 2)) {
    try {
      return await attempt();
    } catch (error) {
      log(
        `[rebuild] ${what} failed: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}; trying again in ${wait / 1000} s`,
      );
      if (cancelled()) return;
      await new Promise((resolve) => setTimeout(resolve, wait));
      if (cancelled()) return;
    }
  }
};

/** What the catching up works with. */
export interface CatchUpContext {
  readonly log: (line: string) => void;
  readonly cancelled: () => boolean;
  readonly kafka: Kafka;
  readonly rebuild: ReturnType<typeof composeRebuild>;
  /** The system's triggers: asked for only once they run (no side catches up before). */
  readonly triggers: () => Triggers;
  /** The functions on the commands topic and on the events topic. */
  readonly commandSide: readonly string[];
  readonly eventFunctions: readonly string[];
  /** The event trigger's consumer group, where the read models must catch up to; undefined when no function reads events. */
  readonly eventsGroup: string | undefined;
}

/** The ways a held side is brought in step: each lets its functions go once it is. */
export interface CatchUp {
  /** Holds the command side and runs the snapshot rebuild until it succeeds; `why` is what the log line says of the table. */
  aggregates(why: string): Promise<void>;
  /** Runs the read-models rebuild until it succeeds, then lets `held` go. */
  readModels(held: readonly string[]): Promise<void>;
  /** Holds both sides, creates the tables again, and catches up each that needs it. */
  recreateTables(): Promise<void>;
}

/** The catching up of a running system's sides. */
export const catchUp = (ctx: CatchUpContext): CatchUp => {
  const { log, cancelled, rebuild, commandSide, eventFunctions } = ctx;
  const triggers = { pause: (name: string) => ctx.triggers().pause(name), resume: (name: string) => ctx.triggers().resume(name) };
  const aggregates = async (why: string): Promise<void> => {
    log(`[rebuild] the aggregates table ${why}: ${commandSide.join(', ')} held until the snapshot rebuild has caught up`);
    // Held (paused by the rebuild's gate, or from the start) until a rebuild succeeds.
    await untilDone('aggregates', log, cancelled, async () => {
      const report = await rebuild.run(
        {},
        {
          gate: {
            pause: async () => void (await Promise.all(commandSide.map((name) => triggers.pause(name)))),
            resume: () => Promise.resolve(commandSide.forEach((name) => triggers.resume(name))),
          },
          onProgress: progressLine(log, 'aggregates'),
        },
      );
      log(`[rebuild] aggregates ${'status' in report ? report.status : 'done'}; commands go through`);
    });
    for (const name of commandSide) triggers.resume(name);
  };
  const readModels = async (held: readonly string[]): Promise<void> => {
    await untilDone('read models', log, cancelled, async () => {
      const report = await rebuild.run({ readModels: true }, { onProgress: progressLine(log, 'read models') });
      if ('itemsWiped' in report)
        log(
          `[rebuild] read models ${report.status}: ${report.applied.toLocaleString('en')} applications of ${report.eventsRead.toLocaleString('en')} events, no command issued; events go on`,
        );
    });
    for (const name of held) triggers.resume(name);
  };
  const recreateTables = async (): Promise<void> => {
    await Promise.all([...commandSide, ...eventFunctions].map((name) => triggers.pause(name)));
    log('[provision] the emulator lost its tables (restarted empty?): creating them again, then catching up as at the start');
    await untilDone('creating the tables', log, cancelled, async () => {
      const again = await provision();
      log(`[provision] created tables [${again.createdTables.join(', ')}]`);
    });
    if ((await aggregatesReadiness(ctx.kafka)) !== 'ready') await aggregates('was lost with the emulator');
    else for (const name of commandSide) triggers.resume(name);
    if (ctx.eventsGroup !== undefined && (await readModelsReadiness(ctx.kafka, ctx.eventsGroup)) !== 'ready')
      await readModels(eventFunctions);
    else for (const name of eventFunctions) triggers.resume(name);
  };
  return { aggregates, readModels, recreateTables };
};
