/**
 * The schema library of the public surface: zod/mini, with the framework's English messages
 * (core/schema.ts). Import it as `import * as z from '…/functions/schema.ts'`, beside
 * functions/index.ts: a namespace re-exported from index.ts would defeat tree shaking and put
 * all of zod (about 430 KB) in every function's bundle (test/infra/bundles.test.ts).
 */
export * from './core/schema.ts';
