import { defineConfig } from 'tsup';
import { SERVER_BUNDLE_EXTERNAL_IMPORT, SERVER_BUNDLE_OPTIONS } from '../../scripts/server-bundle.mjs';

export default defineConfig([
  // The library entry (createReferenceServer and friends): its dependencies stay imports, as in every package.
  {
    entry: ['src/index.ts'],
    format: ['esm'],
    dts: true,
    // Both builds run at once: this one empties dist/ but for the program's files, which the other writes.
    clean: ['!main.js', '!main.js.map'],
    sourcemap: true,
    target: 'node20',
  },
  // The program (`npm start`, `node dist/main.js serve`): one file holding its npm dependencies, so it
  // starts without resolving and compiling each of their modules (scripts/server-bundle.mjs).
  {
    entry: ['src/main.ts'],
    format: ['esm'],
    platform: 'node',
    // One file: what the program imports on demand (the Postgres driver, the mail transport) included.
    splitting: false,
    sourcemap: true,
    target: 'node20',
    ...SERVER_BUNDLE_OPTIONS,
    // tsup bundles what `noExternal` matches before it looks at `external`: every import but those
    // (the external pattern, less its leading `^`, in a negative lookahead).
    noExternal: [new RegExp(`^(?!${SERVER_BUNDLE_EXTERNAL_IMPORT.source.slice(1)})`)],
  },
]);
