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
    files: ['functions/domain/**/*.ts', 'functions/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*', 'kafkajs', '@aws-sdk/*', '@middy/*', '@aws-lambda-powertools/*', 'aws-cdk-lib', 'aws-cdk-lib/*'], message: 'The domain and core are pure: no I/O, no AWS SDK, no Kafka.' },
            { group: ['**/adapters/**', '**/runtime/**'], message: 'The domain and core may not depend on adapters.' },
          ],
        },
      ],
    },
  },
  { files: ['*.js', 'bin/*.js'], ...tseslint.configs.disableTypeChecked },
  { files: ['bin/*.js'], languageOptions: { globals: { process: 'readonly', URL: 'readonly' } } },
);
