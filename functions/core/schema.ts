/**
 * zod/mini with English messages: the schema library of the framework and of the example
 * domains. The mini API keeps a function's bundle about 430 KB smaller than classic zod
 * does (measured with esbuild); its messages must be configured once, here.
 */
import { config } from 'zod/mini';
import en from 'zod/v4/locales/en.js';

config(en());

// Re-exported binding by binding (import it as `* as z`), so bundlers drop what is unused.
export * from 'zod/mini';

/** A Standard Schema issue, as far as messages need it. */
type Issue = { readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined };

/** The first few issues of a failed validation as one line: `path: message; …`. */
export const describeIssues = (issues: readonly Issue[]): string =>
  issues
    .slice(0, 5)
    .map((i) => {
      const path = (i.path ?? []).map((p) => String(typeof p === 'object' ? p.key : p)).join('.');
      return path === '' ? i.message : `${path}: ${i.message}`;
    })
    .join('; ');
