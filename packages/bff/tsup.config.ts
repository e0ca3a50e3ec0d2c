import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: ['src/index.ts', 'src/knex.ts'],
    format: ['esm'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
  },
  {
    // The browser logger: no dependencies, runs in any modern browser.
    entry: ['src/browser.ts'],
    format: ['esm'],
    dts: true,
    sourcemap: true,
    platform: 'browser',
    target: 'es2020',
  },
]);
