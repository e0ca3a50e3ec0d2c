import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));

interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly private?: boolean;
  readonly engines?: { node?: string };
  readonly files?: string[];
  readonly exports?: Record<string, unknown>;
  readonly dependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
}

/** Every workspace package: its folder and manifest. */
function workspaces(): Array<{ dir: string; manifest: Manifest }> {
  return ['packages', 'examples'].flatMap((group) =>
    readdirSync(join(root, group))
      .map((name) => join(root, group, name))
      .filter((dir) => existsSync(join(dir, 'package.json')))
      .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest })),
  );
}

/** The files an `exports` map points at, conditions and subpaths included. */
function exportTargets(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(exportTargets);
  return [];
}

describe('workspace packages install from the registry as they are published', () => {
  const all = workspaces();
  const byName = new Map(all.map((entry) => [entry.manifest.name, entry.manifest]));

  it.each(all.map((entry) => [entry.manifest.name, entry] as const))('%s', (_name, { dir, manifest }) => {
    expect(manifest.engines?.node).toBe('>=20.19');
    // Whatever another package depends on must be publishable, at the pinned version.
    for (const [dependency, range] of Object.entries({ ...manifest.dependencies, ...manifest.peerDependencies })) {
      const target = byName.get(dependency);
      if (!target) continue;
      expect({ dependency, private: target.private ?? false }).toEqual({ dependency, private: false });
      expect({ dependency, range }).toEqual({ dependency, range: target.version });
    }
    if (manifest.private) return;
    expect(manifest.files).toContain('dist');
    expect(existsSync(join(dir, 'README.md'))).toBe(true);
    // npm always packs package.json; everything else an export names must be in `files`.
    const unpacked = exportTargets(manifest.exports).filter(
      (target) =>
        target !== './package.json' && !manifest.files?.some((file) => target.startsWith(`./${file}/`) || target === `./${file}`),
    );
    expect(unpacked).toEqual([]);
  });
});
