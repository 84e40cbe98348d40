/**
 * Relative links and `#anchors` of markdown files, checked the way GitHub renders them: a link
 * to a file needs the file, a link to a heading needs a heading whose slug (github-slugger's
 * rule) is the anchor. Fenced code and inline code are not markdown, so they hold no links
 * and no headings.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** A link that does not resolve: where it is, what it points at, and why it fails. */
export interface BrokenLink {
  readonly file: string;
  readonly line: number;
  readonly target: string;
  readonly problem: string;
}

/** The lines of a markdown text that are markdown, not code: fenced blocks are blanked. */
const proseLines = (text: string): string[] => {
  let fence: string | undefined;
  return text.split('\n').map((line) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === undefined && marker !== undefined) {
      fence = marker;
      return '';
    }
    if (fence !== undefined) {
      if (marker !== undefined && marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = undefined;
      return '';
    }
    return line;
  });
};

/** A heading's text as GitHub renders it: code spans, links and emphasis reduced to their text. */
const renderedText = (heading: string): string =>
  heading
    .replace(/`([^`]*)`/g, '$1')
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\*\*|\*/g, '')
    .trim();

/** GitHub's anchor for a heading (github-slugger): lower case, punctuation dropped, spaces to hyphens. */
export const slug = (heading: string): string =>
  renderedText(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');

/** Every anchor of a markdown text, duplicates numbered as GitHub numbers them (`-1`, `-2`). */
export const anchorsOf = (text: string): Set<string> => {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const line of proseLines(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = slug(heading);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
};

/** The link targets of a markdown text with their line numbers (inline and reference links, images). */
export const linksOf = (text: string): { line: number; target: string }[] => {
  const links: { line: number; target: string }[] = [];
  proseLines(text).forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, '');
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ line: i + 1, target: m[1] as string });
    const definition = /^ {0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(line);
    if (definition !== null) links.push({ line: i + 1, target: definition[1] as string });
  });
  return links;
};

const external = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target);

/** The links of `files` (paths under `root`) that do not resolve. */
export const brokenLinks = (root: string, files: readonly string[]): BrokenLink[] => {
  const anchorCache = new Map<string, Set<string>>();
  const anchors = (path: string): Set<string> => {
    let found = anchorCache.get(path);
    if (found === undefined) anchorCache.set(path, (found = anchorsOf(readFileSync(path, 'utf8'))));
    return found;
  };
  const broken: BrokenLink[] = [];
  for (const file of files) {
    const path = resolve(root, file);
    for (const { line, target } of linksOf(readFileSync(path, 'utf8'))) {
      if (external(target)) continue;
      const hash = target.indexOf('#');
      const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
      const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
      const to = pathPart === '' ? path : pathPart.startsWith('/') ? join(root, pathPart) : resolve(dirname(path), pathPart);
      const fail = (problem: string): void => void broken.push({ file, line, target, problem });
      if (relative(root, to).startsWith('..')) fail('points outside the repository');
      else if (!existsSync(to)) fail(`no such file: ${relative(root, to)}`);
      else if (anchor !== undefined && anchor !== '') {
        if (statSync(to).isDirectory() || !to.endsWith('.md')) fail('an anchor into a file that is not markdown');
        else if (!anchors(to).has(anchor)) fail(`no heading with the anchor #${anchor} in ${relative(root, to)}`);
      }
    }
  }
  return broken;
};
