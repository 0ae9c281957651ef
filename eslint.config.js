// Lint: the TypeScript recommendations that catch bugs, and the capability boundaries of ARCHITECTURE.md.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { boundaries } from './eslint/boundaries.js';

export default tseslint.config(
  { ignores: ['node_modules/**', 'traces/**', '.toolsearch/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mjs', '**/*.js'],
    languageOptions: { ecmaVersion: 2022, sourceType: 'module', globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', Buffer: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', TextEncoder: 'readonly', TextDecoder: 'readonly', structuredClone: 'readonly', queueMicrotask: 'readonly', performance: 'readonly', fetch: 'readonly', globalThis: 'readonly' } },
    plugins: { project: { rules: { boundaries } } },
    rules: {
      'project/boundaries': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // Sanitizers match control characters on purpose.
      'no-control-regex': 'off',
    },
  },
  {
    // Tests and benches read JSON answers whose shape the assertions check.
    files: ['test/**', 'bench/**', 'scripts/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
