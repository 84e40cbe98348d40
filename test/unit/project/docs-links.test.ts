/**
 * The README is short and its pages are reachable: every relative link and `#anchor` in
 * README.md and docs/*.md resolves as GitHub renders it, and the README stays a front page.
 */
import { existsSync, mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { anchorsOf, brokenLinks, linksOf, slug } from '../../support/markdown-links.ts';

const root = join(import.meta.dirname, '../../..');
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

describe('the documentation', () => {
  it('README.md stays under 220 lines', () => {
    expect(readFileSync(join(root, 'README.md'), 'utf8').split('\n').length).toBeLessThan(220);
  });

  it('runs in CI the test command the README gives', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const ci = readFileSync(join(root, '.ci/run'), 'utf8');
    const testCommand = /^(npm \S*test\S*)\s+#/m.exec(readme)?.[1];
    expect(testCommand).toBe('npm test');
    expect(ci.split('\n').filter((line) => line.trim() === testCommand)).toHaveLength(1);
  });

  it('links every page of docs/ from README.md', () => {
    const linked = new Set(linksOf(readFileSync(join(root, 'README.md'), 'utf8')).map((l) => l.target.split('#')[0]));
    expect(pages.filter((p) => p !== 'README.md' && !linked.has(p))).toEqual([]);
  });

  it('has no relative link or anchor that does not resolve', () => {
    expect(brokenLinks(root, pages)).toEqual([]);
  });

  it('names in code spans only files and folders that exist (code moves; a page must follow)', () => {
    const named = /`((?:functions|local|infra|test|bench|chaos|sim|bin|docs)\/[\w./-]+)`/g;
    const stale = pages.flatMap((page) =>
      readFileSync(join(root, page), 'utf8')
        .split('\n')
        // A line may name a file on the record as gone ("removed since").
        .filter((line) => !/\bremoved\b/.test(line))
        .flatMap((line) => [...line.matchAll(named)].map((m) => m[1] as string))
        .filter((path) => !existsSync(join(root, path)))
        .map((path) => `${page}: ${path}`),
    );
    expect(stale).toEqual([]);
  });
});

describe('the link check', () => {
  const dir = mkdtempSync(join(tmpdir(), 'docs-links-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'docs'));
  writeFileSync(
    join(dir, 'docs', 'PAGE.md'),
    [
      '# A page',
      '## Deploying to AWS: what `cdk destroy` leaves',
      '## Interleaved load (`npm run bench -- interleaved`)',
      '## Notes',
      '## Notes',
      '```sh',
      '# not a heading',
      '[not a link](MISSING.md)',
      '```',
      'Inline `[not a link](MISSING.md)` either.',
    ].join('\n'),
  );

  const check = (markdown: string) => {
    writeFileSync(join(dir, 'README.md'), markdown);
    return brokenLinks(dir, ['README.md', 'docs/PAGE.md']).map((b) => b.problem);
  };

  it('makes anchors as GitHub does', () => {
    expect(slug("Command API: POST-and-wait against the CLI's wait (`npm run bench:http`)")).toBe(
      'command-api-post-and-wait-against-the-clis-wait-npm-run-benchhttp',
    );
    expect([...anchorsOf(readFileSync(join(dir, 'docs', 'PAGE.md'), 'utf8'))]).toEqual([
      'a-page',
      'deploying-to-aws-what-cdk-destroy-leaves',
      'interleaved-load-npm-run-bench----interleaved',
      'notes',
      'notes-1',
    ]);
  });

  it('passes links that resolve, and ignores code and external links', () => {
    expect(
      check(
        [
          '# Top',
          '[page](docs/PAGE.md) [section](docs/PAGE.md#deploying-to-aws-what-cdk-destroy-leaves)',
          '[again](docs/PAGE.md#notes-1) [here](#top) [web](https://example.com/x.md#nope) [dir](docs/)',
        ].join('\n'),
      ),
    ).toEqual([]);
  });

  it('fails on a missing file, a missing anchor, and a link out of the repository', () => {
    expect(
      check(
        [
          '# Top',
          '[gone](docs/GONE.md)',
          '[no such section](docs/PAGE.md#deploying)',
          '[no such local section](#bottom)',
          '[outside](../elsewhere/DESIGN.md)',
          '[ref]: docs/ALSO-GONE.md',
        ].join('\n'),
      ),
    ).toEqual([
      'no such file: docs/GONE.md',
      'no heading with the anchor #deploying in docs/PAGE.md',
      'no heading with the anchor #bottom in README.md',
      'points outside the repository',
      'no such file: docs/ALSO-GONE.md',
    ]);
  });
});
