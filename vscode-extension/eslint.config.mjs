// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'out/', 'node_modules/', 'test/e2e/artifacts/'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['media/**/*.js', 'test/e2e/**/*.mjs', 'test/grammar/**/*.mjs', '*.mjs'],
    languageOptions: {
      globals: { window: 'readonly', document: 'readonly', console: 'readonly', process: 'readonly', CSS: 'readonly', acquireVsCodeApi: 'readonly', setTimeout: 'readonly', URL: 'readonly', fetch: 'readonly' },
    },
  },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      eqeqeq: 'error',
    },
  },
);
