// Type-aware lint for every TypeScript file; the domain may not import infrastructure.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

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
  {
    files: ['functions/domain/**/*.ts', 'functions/core/**/*.ts', 'functions/command-api/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*', 'kafkajs', '@aws-sdk/*', '@middy/*', '@aws-lambda-powertools/*', 'aws-cdk-lib', 'aws-cdk-lib/*'], message: 'The domain, core and command API logic are pure: no I/O, no AWS SDK, no Kafka.' },
            { group: ['**/adapters/**', '**/runtime/**'], message: 'The domain, core and command API logic may not depend on adapters: declare the interface, let an adapter implement it.' },
          ],
        },
      ],
    },
  },
  { files: ['*.js', 'bin/*.js'], ...tseslint.configs.disableTypeChecked },
  { files: ['bin/*.js'], languageOptions: { globals: { process: 'readonly', URL: 'readonly' } } },
);
