/**
 * How every function is bundled, in one place: the CDK stack (infra/node-function.ts) and the
 * bundle budget test build with the same esbuild options, so the budget measures what deploys.
 */
import { build, type Metafile } from 'esbuild';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { functions } from '../functions/topology.ts';

/** The project root: function entries are relative to it. */
export const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Node.js major version of the Lambda runtime, the esbuild target and the project's own Node. */
export const NODE_MAJOR = 22;

/** esbuild options of every function (ESM, minified, source maps, AWS SDK v3 bundled rather than taken from the runtime). */
export const BUNDLING = {
  format: 'esm',
  target: `node${NODE_MAJOR}`,
  platform: 'node',
  mainFields: ['module', 'main'],
  minify: true,
  sourcemap: true,
  sourcesContent: false,
  // Bundle the modular AWS SDK v3 too: pinned by our lock file, and tree-shaken.
  external: [] as string[],
  // kafkajs and other CommonJS dependencies call require(); an ESM bundle must provide it.
  banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
  tsconfig: join(PROJECT_ROOT, 'tsconfig.json'),
} as const;

/** A function bundle as the stack would deploy it. */
export interface Bundle {
  /** The bundle file (`index.mjs`, as the CDK names it). */
  readonly file: string;
  /** Size of the bundle in bytes, source map excluded. */
  readonly bytes: number;
  /** esbuild's metafile: which input put how many bytes into the output. */
  readonly metafile: Metafile;
}

/** Bundles `entry` (relative to the project root) into `outdir` with the stack's options. */
export const buildBundle = async (entry: string, outdir: string): Promise<Bundle> => {
  const file = join(outdir, 'index.mjs');
  const { metafile } = await build({
    entryPoints: [join(PROJECT_ROOT, entry)],
    bundle: true,
    outfile: file,
    format: BUNDLING.format,
    target: BUNDLING.target,
    platform: BUNDLING.platform,
    mainFields: [...BUNDLING.mainFields],
    minify: BUNDLING.minify,
    sourcemap: BUNDLING.sourcemap,
    sourcesContent: BUNDLING.sourcesContent,
    external: BUNDLING.external,
    banner: { js: BUNDLING.banner },
    tsconfig: BUNDLING.tsconfig,
    absWorkingDir: PROJECT_ROOT,
    metafile: true,
    logLevel: 'warning',
  });
  const output = Object.entries(metafile.outputs).find(([path]) => resolve(PROJECT_ROOT, path) === file);
  if (output === undefined) throw new Error(`esbuild wrote no ${file}`);
  return { file, bytes: output[1].bytes, metafile };
};

/** Every function of the stack: the topology's and the topics custom resource's (infra/topics.ts). */
export const deployedEntries: Readonly<Record<string, string>> = {
  ...Object.fromEntries(Object.entries(functions).map(([key, spec]) => [key, spec.entry])),
  topicsProvider: 'functions/handlers/topics-provider.ts',
};

/** Bytes each package (or the project's own code) put into the bundle, largest first. */
export const bytesByPackage = (bundle: Bundle): [string, number][] => {
  const totals = new Map<string, number>();
  for (const output of Object.values(bundle.metafile.outputs)) {
    for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
      const name = /.*node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1] ?? '(project)';
      totals.set(name, (totals.get(name) ?? 0) + bytesInOutput);
    }
  }
  return [...totals].sort((a, b) => b[1] - a[1]);
};
