// Type-aware lint for every TypeScript file, and the layers of functions/ (docs/DESIGN.md):
// each folder may import only the folders below it, so a wrong arrow fails `npm run lint`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const io = ['node:*', 'kafkajs', '@aws-sdk/*', '@middy/*', '@aws-lambda-powertools/*', 'aws-cdk-lib', 'aws-cdk-lib/*'];
const wiring = ['**/handlers/**', '**/compose/**'];
const notBelow = (folders) => folders.map((f) => (f.endsWith('.ts') ? `**/${f}` : `**/${f}/**`));

/**
 * The layers, bottom up. `pure`: no I/O package at all. `may not`: the folders (and files)
 * of functions/ that the layer must not import. Adapters implement the ports the layers
 * above them declare (command/ports.ts, event/ports.ts, rebuild/ports.ts, core/log.ts);
 * compose/ wires each side, and the handlers only call it.
 */
const LAYERS = [
  {
    layer: 'core',
    pure: true,
    mayNot: [
      'domain',
      'control',
      'command',
      'command-api',
      'event',
      'rebuild',
      'projections',
      'reactions',
      'adapters',
      'config.ts',
      'topology.ts',
    ],
  },
  {
    layer: 'domain',
    pure: true,
    mayNot: ['control', 'command', 'command-api', 'event', 'rebuild', 'projections', 'reactions', 'adapters', 'config.ts', 'topology.ts'],
  },
  {
    layer: 'control',
    pure: true,
    mayNot: ['domain', 'command', 'command-api', 'event', 'rebuild', 'projections', 'reactions', 'adapters', 'config.ts', 'topology.ts'],
  },
  {
    layer: 'command',
    pure: false,
    mayNot: ['domain', 'command-api', 'event', 'rebuild', 'projections', 'reactions', 'adapters', 'config.ts', 'topology.ts'],
  },
  {
    layer: 'event',
    pure: false,
    mayNot: ['domain', 'command', 'command-api', 'rebuild', 'projections', 'reactions', 'adapters', 'config.ts', 'topology.ts'],
  },
  {
    layer: 'rebuild',
    pure: false,
    // The rebuild shares the head's shape and the partition checkpoints with the command side, never its processor.
    mayNot: [
      'domain',
      'command/process-batch.ts',
      'command/decide-aggregate.ts',
      'command/decide-one.ts',
      'command/check-partitions.ts',
      'command/dedupe.ts',
      'command/decode.ts',
      'command-api',
      'projections',
      'reactions',
      'adapters',
      'config.ts',
      'topology.ts',
    ],
  },
  {
    layer: 'command-api',
    pure: true,
    mayNot: [
      'command/process-batch.ts',
      'command/decide-aggregate.ts',
      'event',
      'rebuild',
      'projections',
      'reactions',
      'adapters',
      'config.ts',
      'topology.ts',
    ],
  },
  {
    layer: 'projections',
    pure: false,
    mayNot: ['command', 'command-api', 'rebuild', 'reactions', 'adapters', 'event/process-batch.ts', 'topology.ts'],
  },
  {
    layer: 'reactions',
    pure: false,
    mayNot: ['command', 'command-api', 'rebuild', 'projections', 'adapters', 'event/process-batch.ts', 'topology.ts'],
  },
  {
    layer: 'adapters',
    pure: false,
    mayNot: [
      'command/process-batch.ts',
      'command/decide-aggregate.ts',
      'event/process-batch.ts',
      'rebuild/rebuild-aggregates.ts',
      'rebuild/rebuild-projection.ts',
    ],
  },
];

const layers = LAYERS.map(({ layer, pure, mayNot }) => ({
  files: [`functions/${layer}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          ...(pure ? [{ group: io, message: `functions/${layer} is pure: no I/O, no AWS SDK, no Kafka.` }] : []),
          {
            group: [...notBelow(mayNot), ...wiring],
            message: `functions/${layer} may not import this layer (docs/DESIGN.md, "Layers"): declare a port, let an adapter implement it.`,
          },
        ],
      },
    ],
  },
}));

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
  { files: ['*.js', 'bin/*.js'], ...tseslint.configs.disableTypeChecked },
  { files: ['bin/*.js'], languageOptions: { globals: { process: 'readonly', URL: 'readonly' } } },
);
