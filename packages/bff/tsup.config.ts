import { defineConfig } from 'tsup';

// One build (several configs would race on `clean`). `src/browser.ts`, the browser logger, imports
// nothing outside src/browser/, so its output is a self-contained ES module any modern browser loads.
export default defineConfig({
  entry: ['src/index.ts', 'src/knex.ts', 'src/browser.ts'],
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'node20',
});
