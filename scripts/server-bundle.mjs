/**
 * How the reference server's program is bundled: examples/server's build
 * (tsup) writes `dist/main.js` as one file that holds its npm dependencies,
 * and `npm run bench` bundles the current sources the same way, so that it
 * measures what `npm start` runs.
 *
 * One file starts faster: Node.js no longer resolves, reads and compiles
 * some 900 modules one by one, which took nearly half of the server's
 * cold start (docs/benchmarks-history.md, nineteenth pass). The library packages are not
 * bundled: a host that embeds idt installs them and their dependencies as
 * usual.
 */

/**
 * What stays out of the bundle and is loaded from `node_modules` at run
 * time: the native addons (and the optional ones of `pg` and `ws`, used
 * when installed), and the drivers knex would load only for the databases
 * idt does not support (not installed, so not bundled).
 */
export const SERVER_BUNDLE_EXTERNAL = Object.freeze([
  'better-sqlite3',
  '@node-rs/argon2',
  'pg-native',
  'bufferutil',
  'utf-8-validate',
  'mysql',
  'mysql2',
  'mariadb',
  'oracledb',
  'pg-query-stream',
  'sqlite3',
  'tedious',
]);

/** `text` matched literally in a regular expression. */
const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The import specifiers that stay out of the bundle: a module of
 * {@link SERVER_BUNDLE_EXTERNAL} or a path inside one (`mariadb/callback`),
 * as esbuild's `external` reads a package's name.
 */
export const SERVER_BUNDLE_EXTERNAL_IMPORT = new RegExp(`^(?:${SERVER_BUNDLE_EXTERNAL.map(escapeRegExp).join('|')})(?:/|$)`);

/**
 * The bundle's options, the same for esbuild (the bench) and tsup (the
 * build), which take them under the same names:
 *
 * - `external`: {@link SERVER_BUNDLE_EXTERNAL}.
 * - `banner`: the CommonJS dependencies inside an ES module call `require`
 *   (for Node.js built-ins and the external addons), which an ES module does
 *   not have; the bundle's first line gives them one, resolving from the
 *   bundle's folder.
 * - `minifyWhitespace`: no comments, no indentation. V8 keeps a script's
 *   whole source in memory, at two bytes a character as soon as one
 *   character is beyond Latin-1 (a dash in a dependency's comment is
 *   enough): the commented bundle held 9.3 MiB of heap, this one, 3.4 MB of
 *   ASCII (esbuild escapes the rest), 3.2 MiB. Names are kept; stack traces
 *   point into long lines, which `node --enable-source-maps` maps back
 *   through `main.js.map`.
 */
export const SERVER_BUNDLE_OPTIONS = Object.freeze({
  external: [...SERVER_BUNDLE_EXTERNAL],
  banner: {
    js: "import { createRequire as __idtCreateRequire } from 'node:module'; const require = __idtCreateRequire(import.meta.url);",
  },
  minifyWhitespace: true,
});
