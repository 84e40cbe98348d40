/**
 * Where the local stack keeps its installs, data, logs and pid files: all under `.cache/`
 * (git-ignored), so deleting that folder returns the project to a fresh checkout.
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/** The project root (the folder holding package.json). */
export const projectRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Root of everything the local stack downloads or writes. */
export const cacheDir = join(projectRoot, '.cache');

/** Pid files and process logs of the running stack. */
export const stackDir = join(cacheDir, 'stack');

/** Log file of a stack process. */
export const logFile = (name: string): string => join(stackDir, `${name}.log`);

/** Pid file of a stack process. */
export const pidFile = (name: string): string => join(stackDir, `${name}.pid`);
