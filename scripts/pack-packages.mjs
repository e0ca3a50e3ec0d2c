#!/usr/bin/env node
// `npm run pack:packages [-- --out <dir>] [--json]`: writes the tarball of every publishable
// package (packages/*, not private) to one folder, `dist-packages/` by default, as
// `idt-<name>.tgz` (no version in the name, so the install line of docs/embedding.md stays the
// same from one version to the next), and prints the `npm install` line for a project. Packages
// whose dist/ is older than their src/ are built first (scripts/dist-stale.mjs).
//
// The tarballs are what the registry would serve: `npm pack` of each workspace. Their @idt
// dependencies name exact versions (`"@idt/core": "0.1.0"`), so npm takes them from the tarballs
// given in the same `npm install` (or already installed from them), never from the registry.
//
// With --json, standard output is one JSON array, one entry per package:
// { name, version, file (absolute path of the tarball), files (the paths it holds) };
// the build's output goes to standard error.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { staleWorkspaces } from './dist-stale.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function usage(message) {
  console.error(`error: ${message}\nUsage: npm run pack:packages [-- --out <dir>] [--json]`);
  process.exit(2);
}

const args = process.argv.slice(2);
let out = 'dist-packages';
let json = false;
for (let index = 0; index < args.length; index++) {
  const arg = args[index];
  if (arg === '--json') json = true;
  else if (arg === '--out') {
    out = args[++index] ?? usage('--out needs a folder');
  } else if (arg?.startsWith('--out=')) out = arg.slice('--out='.length);
  else usage(`unknown argument ${arg}`);
}
// `npm run` starts scripts in the package root; a relative --out is taken from where npm was run.
const destination = resolve(process.env.INIT_CWD ?? process.cwd(), out);

/** The publishable workspaces, in the order of the root manifest's `workspaces` (dependencies first). */
function publishable() {
  const { workspaces } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  return workspaces
    .filter((dir) => dir.startsWith('packages/'))
    .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) }))
    .filter(({ manifest }) => manifest.private !== true);
}

/** The files an `exports` map points at, conditions and subpaths included. */
function exportTargets(value) {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(exportTargets);
  return [];
}

/** `idt-core.tgz` for `@idt/core`. */
function tarballName(name) {
  return `${name.replace(/^@/, '').replace(/\//g, '-')}.tgz`;
}

/** A path as a POSIX shell word. */
function shellWord(path) {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}

const packages = publishable();
const log = (line) => (json ? console.error(line) : console.log(line));

// One run at a time per checkout: two builds of a package at once clean each other's dist/.
const lock = join(ROOT, 'node_modules', '.cache', 'idt-pack-packages.lock');
mkdirSync(dirname(lock), { recursive: true });
for (let waited = false; ; ) {
  try {
    mkdirSync(lock);
    break;
  } catch (error) {
    if (error.code !== 'EEXIST') throw error;
    // A run that was killed leaves its lock: older than ten minutes, it is taken over.
    if (Date.now() - statSync(lock, { throwIfNoEntry: false })?.mtimeMs > 600_000) rmSync(lock, { recursive: true, force: true });
    if (!waited) log('Waiting for another `npm run pack:packages` in this checkout…');
    waited = true;
    await new Promise((done) => setTimeout(done, 500));
  }
}
process.on('exit', () => rmSync(lock, { recursive: true, force: true }));
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));

/** The files of a package's `exports` that do not exist, as `packages/core/dist/index.d.ts`. */
const missingExports = ({ dir, manifest }) =>
  exportTargets(manifest.exports)
    .filter((target) => !existsSync(join(ROOT, dir, target)))
    .map((target) => `${dir}/${target.replace(/^\.\//, '')}`);

// Built again: packages whose dist/ is older than src/, or lacks a file its exports name (a build
// whose declaration step failed leaves the JavaScript without the .d.ts files).
const stale = new Set(staleWorkspaces(ROOT));
const toBuild = packages.filter((pkg) => stale.has(pkg.dir) || missingExports(pkg).length > 0).map(({ dir }) => dir);
if (toBuild.length > 0) {
  log(`Building ${toBuild.join(', ')}…`);
  try {
    execFileSync('npm', ['run', 'build', '--silent', ...toBuild.flatMap((dir) => ['--workspace', dir])], {
      cwd: ROOT,
      stdio: ['ignore', json ? 'pipe' : 'inherit', 'inherit'],
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch {
    console.error('error: the build failed (its output is above); the tarballs were not written.');
    process.exit(1);
  }
}

// Another build (a test, a watcher) may be writing a package's dist/ right now: wait for every export.
const deadline = Date.now() + 30_000;
for (;;) {
  const missing = packages.flatMap(missingExports);
  if (missing.length === 0) break;
  if (Date.now() > deadline) {
    console.error(`error: not built: ${missing.join(', ')}. Run \`npm run build\` in the checkout.`);
    process.exit(1);
  }
  // Polls the file system while the other build finishes.
  await new Promise((done) => setTimeout(done, 500));
}

mkdirSync(destination, { recursive: true });
for (const { manifest } of packages) rmSync(join(destination, tarballName(manifest.name)), { force: true });
const packed = JSON.parse(
  execFileSync(
    'npm',
    ['pack', '--json', '--pack-destination', destination, ...packages.flatMap(({ dir }) => ['--workspace', dir])],
    { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 },
  ),
);
const results = packed.map((result) => {
  const file = join(destination, tarballName(result.name));
  renameSync(join(destination, result.filename), file);
  return { name: result.name, version: result.version, file, files: result.files.map((entry) => entry.path) };
});
// Tarballs an earlier version left (npm pack's own names carry the version).
for (const name of readdirSync(destination)) {
  if (/^idt-[a-z-]+-\d+\.\d+\.\d+.*\.tgz$/.test(name)) rmSync(join(destination, name), { force: true });
}

if (json) {
  console.log(JSON.stringify(results, null, 2));
} else {
  const shown = relative(process.cwd(), destination) || '.';
  console.log(`Packed ${results.length} packages into ${shown}/:`);
  const width = Math.max(...results.map((result) => tarballName(result.name).length));
  for (const result of results) console.log(`  ${tarballName(result.name).padEnd(width)}  ${result.name} ${result.version}`);
  const path = (name) => shellWord(join(destination, tarballName(name)));
  const core = ['@idt/problem', '@idt/core', '@idt/identity', '@idt/oidc'];
  const others = results.map((result) => result.name).filter((name) => !core.includes(name) && name !== '@idt/cli');
  console.log('');
  console.log('In your project, identity and the OpenID provider (then better-sqlite3 or pg, see docs/embedding.md#install):');
  console.log(`  npm install ${core.map(path).join(' ')}`);
  console.log(`Other modules: add their tarballs to that line (${others.map(tarballName).join(', ')}).`);
  console.log(`The idt command line: npm install --save-dev ${path('@idt/cli')}`);
}
