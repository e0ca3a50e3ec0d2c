// Whether any workspace package's dist/ is older than its src/ (or missing):
// shared by `npm start` (scripts/start.mjs), `npm run pack:packages`
// (scripts/pack-packages.mjs) and the benchmarks (bench/run.mjs).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

function newestMtime(dir) {
  let newest = 0;
  if (!existsSync(dir)) return newest;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * The packages under `packages/` or `examples/` (relative to `root`) with a build script whose
 * `dist/` is missing or older than their `src/`, as `packages/core`, in folder order.
 */
export function staleWorkspaces(root = process.cwd()) {
  const stale = [];
  for (const group of ['packages', 'examples']) {
    for (const name of readdirSync(join(root, group))) {
      const pkg = join(root, group, name);
      if (!existsSync(join(pkg, 'package.json')) || !existsSync(join(pkg, 'src'))) continue;
      // Examples run from source (examples/dashboard, the framework examples): nothing to build.
      if (!JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')).scripts?.build) continue;
      const built = join(pkg, 'dist', 'index.js');
      if (!existsSync(built) || newestMtime(join(pkg, 'src')) > statSync(built).mtimeMs) stale.push(`${group}/${name}`);
    }
  }
  return stale;
}

/** True when a package under `packages/` or `examples/` (relative to `root`) with a build script needs `npm run build`. */
export function isDistStale(root = process.cwd()) {
  return staleWorkspaces(root).length > 0;
}
