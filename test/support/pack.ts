import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * The packages as a project installs them from a checkout: the tarballs of
 * `npm run pack:packages` (scripts/pack-packages.mjs), installed with npm
 * into a project outside the repository, in a user's environment.
 */

/** The repository's root folder. */
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const run = promisify(execFile);

/** A package as `npm run pack:packages -- --json` reports it. */
export interface PackedPackage {
  readonly name: string;
  readonly version: string;
  /** The tarball's absolute path, `<destination>/idt-core.tgz`. */
  readonly file: string;
  /** The paths the tarball holds, relative to the package. */
  readonly files: readonly string[];
}

/**
 * Packs every publishable package into `destination` with the checkout's
 * own script (building stale packages first), as `npm run pack:packages --
 * --out <destination>` does.
 */
export async function packPackages(destination: string): Promise<PackedPackage[]> {
  const { stdout } = await run(process.execPath, [join(ROOT, 'scripts', 'pack-packages.mjs'), '--out', destination, '--json'], {
    cwd: ROOT,
    env: userEnv(),
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(stdout) as PackedPackage[];
}

/** The environment of a child process as a user's shell would have it: no npm, vitest or idt variables of this run. */
export function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (/^(npm_|vitest|idt_)|^node_(options|path|env)$/i.test(name)) continue;
    env[name] = value;
  }
  return { ...env, ...extra };
}

/**
 * npm settings, as environment variables, that make installing into a scratch
 * project quick without changing what is installed: packages from npm's cache
 * when it has them, no audit, and better-sqlite3's native addon taken from the
 * repository's own install (prebuild-install's local prebuilds, written to
 * `dir`) instead of compiled, when the versions match.
 */
export async function quickInstallEnv(dir: string): Promise<Record<string, string>> {
  const env: Record<string, string> = {
    npm_config_prefer_offline: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
  const sqlite = join(ROOT, 'node_modules', 'better-sqlite3');
  const addon = join(sqlite, 'build', 'Release', 'better_sqlite3.node');
  if (!existsSync(addon)) return env;
  const { version } = JSON.parse(readFileSync(join(sqlite, 'package.json'), 'utf8')) as { version: string };
  const stage = join(dir, 'stage');
  mkdirSync(join(stage, 'build', 'Release'), { recursive: true });
  copyFileSync(addon, join(stage, 'build', 'Release', 'better_sqlite3.node'));
  // The name prebuild-install looks for: {name}-v{version}-{runtime}-v{abi}-{platform}{libc}-{arch}.tar.gz.
  const tarball = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  await run('tar', ['-czf', join(dir, tarball), '-C', stage, 'build']);
  return { ...env, npm_config_better_sqlite3_local_prebuilds: dir };
}

/** Every installed package folder under a node_modules tree, nested ones included, as `name` or `@scope/name`. */
export function installedPackages(nodeModules: string): Array<{ name: string; path: string }> {
  const found: Array<{ name: string; path: string }> = [];
  if (!existsSync(nodeModules)) return found;
  for (const entry of readdirSync(nodeModules, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const path = join(nodeModules, entry.name);
    const packages = entry.name.startsWith('@')
      ? readdirSync(path, { withFileTypes: true })
          .filter((scoped) => scoped.isDirectory())
          .map((scoped) => ({ name: `${entry.name}/${scoped.name}`, path: join(path, scoped.name) }))
      : [{ name: entry.name, path }];
    for (const pkg of packages) {
      found.push(pkg, ...installedPackages(join(pkg.path, 'node_modules')));
    }
  }
  return found;
}
