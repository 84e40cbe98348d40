/**
 * The command line of the project's scripts (`npm run sim`, the benchmarks): options parsed
 * strictly with node:util parseArgs, `--help` for the usage, numbers checked, and anything else
 * refused with what is wrong and where the usage is (exit code 2), never silently ignored.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { KafkaAggregatesError } from '../functions/core/errors.ts';

type Options = NonNullable<ParseArgsConfig['options']>;

/** A script's command line: what runs it (`npm run sim --`), and its usage. */
export interface Script {
  readonly command: string;
  readonly usage: string;
}

/** An unknown option, a positional argument, or a value a script cannot take. */
export class ScriptUsageError extends KafkaAggregatesError {
  static override readonly disposition = 'reject-record';
  override readonly name = 'ScriptUsageError';
}

/**
 * parseArgs's message for `error` in one line: its three lines on an option whose value starts
 * with '-' (`--rate -1`) become one naming the value and how to write it, if it is meant.
 */
export const parseArgsMessage = (error: unknown, args: readonly string[]): string => {
  const message = error instanceof Error ? error.message : String(error);
  const option = /^Option '(-[^' ]+)[^']*' argument is ambiguous/.exec(message)?.[1];
  if (option === undefined) return message;
  const value = args[args.indexOf(option) + 1] ?? '';
  return `${option} needs a value, and ${value} looks like an option; if it is the value, write ${option}=${value}`;
};

/**
 * The option values in `args` (no positional arguments), or undefined when `--help`/`-h` asks
 * for the usage; an unknown option or a missing value is a ScriptUsageError.
 */
export const parseScript = <O extends Options>(args: readonly string[], options: O) => {
  try {
    const { values } = parseArgs({ args: [...args], options: { ...options, help: { type: 'boolean', short: 'h' } }, strict: true });
    return (values as { help?: boolean }).help === true ? undefined : values;
  } catch (error) {
    throw new ScriptUsageError(parseArgsMessage(error, args));
  }
};

/** `--name`'s value as a whole number of at least `min` (`_` separators allowed), or a ScriptUsageError. */
export const wholeNumber = (name: string, text: string, min = 0): number => {
  const n = Number(text.replaceAll('_', ''));
  if (text.trim() === '' || !Number.isSafeInteger(n) || n < min)
    throw new ScriptUsageError(`--${name} takes a whole number${min > 0 ? ` of at least ${min}` : ''}, not ${JSON.stringify(text)}`);
  return n;
};

/** `--name`'s value as a comma-separated list of whole numbers of at least `min`. */
export const wholeNumbers = (name: string, text: string, min = 0): number[] => text.split(',').map((v) => wholeNumber(name, v.trim(), min));

/**
 * The script's options from the command line, by `parse` (undefined: `--help`). The usage is
 * printed for `--help` (exit 0); a ScriptUsageError is printed with where the usage is (exit 2).
 */
export const scriptOptions = <R>(
  script: Script,
  parse: (args: readonly string[]) => R | undefined,
  args: readonly string[] = process.argv.slice(2),
): R => {
  try {
    const options = parse(args);
    if (options !== undefined) return options;
    console.log(script.usage);
    process.exit(0);
  } catch (error) {
    if (!(error instanceof ScriptUsageError)) throw error;
    console.error(`${error.message}\nSee \`${script.command} --help\`.`);
    process.exit(2);
  }
};
