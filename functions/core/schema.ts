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
