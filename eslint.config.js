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
  'command',
  'event',
  'rebuild',
  'command-api',
  'projections',
  'reactions',
  'adapters',
  'config.ts',
  'topology.ts',
];

/**
 * The layers, bottom up. `pure`: no I/O package at all. `may`: the parts below the layer that
 * it may import (besides itself); every other part of PARTS it may not. `butNot`: files of
 * those parts it still may not import. Adapters implement the ports the layers above them
 * declare (command/ports.ts, event/ports.ts, rebuild/ports.ts, core/log.ts); compose/ wires
 * each side, and the handlers only call it.
 */
const LAYERS = [
  { layer: 'core', pure: true, may: [] },
  { layer: 'domain', pure: true, may: ['core'] },
  { layer: 'control', pure: true, may: ['core'] },
  { layer: 'command', pure: false, may: ['core', 'control'] },
  { layer: 'event', pure: false, may: ['core', 'control'] },
  {
    layer: 'rebuild',
    pure: false,
    // The rebuild shares the head's shape and the partition checkpoints with the command side, never its processor.
    may: ['core', 'control', 'event', 'command'],
    butNot: [
      'command/process-batch.ts',
      'command/decide-aggregate.ts',
      'command/decide-one.ts',
      'command/check-partitions.ts',
      'command/dedupe.ts',
      'command/decode.ts',
    ],
  },
  {
    layer: 'command-api',
    pure: true,
    may: ['core', 'domain', 'control', 'command'],
    butNot: ['command/process-batch.ts', 'command/decide-aggregate.ts'],
  },
  { layer: 'projections', pure: false, may: ['core', 'domain', 'control', 'event', 'config.ts'], butNot: ['event/process-batch.ts'] },
  { layer: 'reactions', pure: false, may: ['core', 'domain', 'control', 'event', 'config.ts'], butNot: ['event/process-batch.ts'] },
  {
    layer: 'adapters',
    pure: false,
    may: PARTS,
    butNot: [
      'command/process-batch.ts',
      'command/decide-aggregate.ts',
      'event/process-batch.ts',
      'rebuild/rebuild-aggregates.ts',
      'rebuild/rebuild-projection.ts',
    ],
  },
];

const layers = LAYERS.map(({ layer, pure, may, butNot = [] }) => {
  const mayNot = [...PARTS.filter((part) => part !== layer && !may.includes(part)), ...butNot];
  return {
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
  };
});

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
