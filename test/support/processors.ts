/** Both batch processors (the command side and the event side) on a test file's own topics and tables, as the batch tests use them. */
import { afterAll, beforeAll } from 'vitest';
import { startCommandSide, type CommandSide } from './command-side.ts';
import { startEventSide, type EventSide } from './event-side.ts';

/** Both batch processors, started before a file's tests and closed after them (filled in by the hooks). */
export const bothProcessors = (): { command: CommandSide; event: EventSide } => {
  const sides = {} as { command: CommandSide; event: EventSide };
  beforeAll(async () => {
    [sides.command, sides.event] = await Promise.all([startCommandSide(), startEventSide()]);
  });
  afterAll(async () => {
    await Promise.all([sides.command.close(), sides.event.close()]);
  });
  return sides;
};
