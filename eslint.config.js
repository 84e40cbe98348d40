// Type-aware lint for every TypeScript file, and the layers of functions/ (docs/DESIGN.md):
// each folder may import only the folders below it, so a wrong arrow fails `npm run lint`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const io = ['node:*', 'kafkajs', '@aws-sdk/*', '@middy/*', '@aws-lambda-powertools/*', 'aws-cdk-lib', 'aws-cdk-lib/*'];
const wiring = ['**/handlers/**', '**/compose/**'];
const notBelow = (folders) => folders.map((f) => (f.endsWith('.ts') ? `**/${f}` : `**/${f}/**`));

/** Every folder (and file) of functions/ that a layer's imports are checked against. */
const PARTS = [
  'core',
  'domain',
  'control',
  'heads',
  'command',
  'park',
  'event',
  'rebuild',
  'command-api',
  'projections',
  'reactions',
  'adapters',
  'config.ts',
  'topology.ts',
  'testing',
];

/**
 * The layers, bottom up. `pure`: no I/O package at all. `may`: what the layer may import
 * besides itself: whole parts of PARTS, or single files of a part it otherwise may not
 * (`command/ports.ts`); every other part is refused. Adapters implement the ports the layers
 * above them declare (heads/ports.ts, command/ports.ts, event/ports.ts, rebuild/ports.ts,
 * command-api/ports.ts, core/log.ts); compose/ wires each side, and the handlers only call it.
 * So a new file of the command side is out of the rebuild's and the adapters' reach until it
 * is named here.
 */
const PORTS = ['command/ports.ts', 'event/ports.ts', 'rebuild/ports.ts', 'command-api/ports.ts'];
const LAYERS = [
  { layer: 'core', pure: true, may: [] },
  // The example domain imports the framework only through its public surface, functions/index.ts.
  { layer: 'domain', pure: true, may: [] },
  { layer: 'control', pure: true, may: ['core'] },
  // The head store: the head's shape, dedupe memory, checkpoints and incarnations, warm cache, size limit, and its port.
  { layer: 'heads', pure: false, may: ['core', 'control'] },
  // The command side parks aggregates through the park store's port and model (policy `park`).
  { layer: 'command', pure: false, may: ['core', 'control', 'heads', 'park/ports.ts', 'park/parked.ts'] },
  // Parked aggregates: their model and store port, and the operator's release and discard, which decide through the command side.
  { layer: 'park', pure: false, may: ['core', 'control', 'heads', 'command', 'event'] },
  // The event side parks aggregates through the same port and model.
  { layer: 'event', pure: false, may: ['core', 'control', 'park/ports.ts', 'park/parked.ts'] },
  // The rebuild replays through the event side's applier and writes heads; of the command side it takes only the publisher port.
  { layer: 'rebuild', pure: false, may: ['core', 'control', 'heads', 'event', 'command/ports.ts'] },
  // The command API validates a command with the command side's own decoder.
  { layer: 'command-api', pure: true, may: ['core', 'control', 'command/decode.ts'] },
  { layer: 'projections', pure: false, may: ['core', 'domain', 'control', 'event/ports.ts', 'config.ts'] },
  { layer: 'reactions', pure: false, may: ['core', 'domain', 'control', 'event/ports.ts', 'config.ts'] },
  {
    layer: 'adapters',
    pure: false,
    may: ['core', 'control', 'heads', 'config.ts', 'topology.ts', 'park/parked.ts', 'park/ports.ts', ...PORTS],
  },
];

/**
 * The public surface (functions/index.ts, pure; functions/schema.ts, zod/mini) and its test kit
 * (functions/testing/) re-export or use core/ only: none may reach the runtime.
 */
const surface = [
  { file: 'index.ts', files: ['functions/index.ts'], pure: true },
  { file: 'schema.ts', files: ['functions/schema.ts'], pure: false },
  { file: 'testing', files: ['functions/testing/**/*.ts'], pure: false },
].map(({ file, files, pure }) => ({
  files,
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          ...(pure ? [{ group: io, message: `functions/${file} is pure: no I/O, no AWS SDK, no Kafka.` }] : []),
          {
            group: [...notBelow(PARTS.filter((part) => part !== 'core' && part !== file)), ...wiring],
            message: `functions/${file} may import only core/ (docs/DESIGN.md, "Layers").`,
          },
        ],
      },
    ],
  },
}));

const layers = LAYERS.map(({ layer, pure, may }) => {
  const mayNot = PARTS.filter((part) => part !== layer && !may.includes(part));
  const except = may.filter((m) => m.includes('/')).map((file) => `!**/${file}`);
  return {
    files: [`functions/${layer}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...(pure ? [{ group: io, message: `functions/${layer} is pure: no I/O, no AWS SDK, no Kafka.` }] : []),
            {
              group: [...notBelow(mayNot), ...except, ...wiring],
              message: `functions/${layer} may not import this layer (docs/DESIGN.md, "Layers"): declare a port, let an adapter implement it.`,
            },
          ],
        },
      ],
    },
  };
});

/**
 * The operator's tools (local/, chaos/) reach tables and topics only through the operator's
 * composition, functions/compose/operator.ts, as the functions reach them through compose/.
 * bench/ is left out: it measures the adapters themselves (the aggregates table subclassed to
 * time its writes, the item layout's sizes, baseline handlers on request-counting clients).
 */
const operatorTools = {
  files: ['local/**/*.ts', 'chaos/**/*.ts'],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          {
            group: ['**/functions/adapters/**'],
            message: 'local/ and chaos/ reach tables and topics through functions/compose/operator.ts (docs/DESIGN.md, "Layers").',
          },
        ],
      },
    ],
  },
};

export default tseslint.config(
  { ignores: ['node_modules/', 'cdk.out/', '.cache/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  ...layers,
  ...surface,
  operatorTools,
  { files: ['*.js', 'bin/*.js'], ...tseslint.configs.disableTypeChecked },
  { files: ['bin/*.js'], languageOptions: { globals: { process: 'readonly', URL: 'readonly' } } },
);
