// The repository's lint: ESLint's and typescript-eslint's recommended rules over every TypeScript
// file (src, jobs, bench, test), without type information: `npm run typecheck` checks the types.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', 'sdk/schema.ts', '.data/**', '.tap/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      // `_`-prefixed names are deliberate: a parameter an interface demands, a destructured rest.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-console': 'error',
      'prefer-const': 'error',
    },
  },
  {
    // Tests read loosely shaped JSON answers; `any` there is the answer under test, not a hole in the code.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', 'no-console': 'off' },
  },
);
