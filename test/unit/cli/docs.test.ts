/**
 * docs/LOCAL.md's table of the CLI ("The CLI") keeps up with the commands: a row for every
 * command of `kafka-aggregates --help`, naming every option of the command's usage line.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { commands } from '../../../local/cli/commands.ts';

const local = readFileSync(fileURLToPath(new URL('../../../docs/LOCAL.md', import.meta.url)), 'utf8');
const section = local.slice(local.indexOf('## The CLI'), local.indexOf('\n## ', local.indexOf('## The CLI') + 1));
const rows = section.split('\n').filter((line) => line.startsWith('| `'));

describe('the CLI table of docs/LOCAL.md', () => {
  it.each(commands.map((c) => [c.name, c] as const))('has a row for %s naming the options of its usage', (name, command) => {
    const row = rows.find((line) => line.startsWith(`| \`${name} `) || line.startsWith(`| \`${name}\``));
    expect(row, `no row for ${name}`).toBeDefined();
    const usage = command.help.split('\n')[0] ?? '';
    for (const option of usage.match(/--[a-z][a-z-]*/g) ?? []) expect(row, `${name}'s row lacks ${option}`).toContain(option);
  });
});
