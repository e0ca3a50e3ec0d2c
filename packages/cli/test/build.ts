import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type PluginBuild } from 'esbuild';
import { inject } from 'vitest';
import { externalNpmDependencies } from '../../../scripts/esbuild-plugins.mjs';

/** The repository root. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** A build of the current sources laid out as an installed idt: the binary, and `node_modules/@idt/*`. */
export interface IdtBuild {
  /** The folder of the build, in the test run's scratch folder. */
  readonly dir: string;
  /** The built binary's entry (`packages/cli/src/bin.ts`, bundled). */
  readonly bin: string;
  /** `node_modules/@idt` of the build: every workspace package, with its `exports` subpaths. */
  readonly scope: string;
}

/** The entry points of a workspace package: `node_modules/@idt/<name>/<subpath>` → its TypeScript source. */
function packageEntries(): { entries: Record<string, string>; manifests: Map<string, Record<string, string>> } {
  const entries: Record<string, string> = {};
  const manifests = new Map<string, Record<string, string>>();
  for (const name of readdirSync(join(ROOT, 'packages'))) {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'packages', name, 'package.json'), 'utf8')) as {
      name: string;
      exports: Record<string, unknown>;
    };
    const exports: Record<string, string> = {};
    for (const subpath of Object.keys(manifest.exports)) {
      // `.` is src/index.ts and `./knex` src/knex.ts, as the vitest aliases map them; JSON and package.json are not code.
      const match = /^\.(?:\/([a-z-]+))?$/.exec(subpath);
      if (!match) continue;
      const file = match[1] ?? 'index';
      entries[`node_modules/${manifest.name}/${file}`] = join(ROOT, 'packages', name, 'src', `${file}.ts`);
      exports[subpath] = `./${file}.js`;
    }
    manifests.set(manifest.name, exports);
  }
  return { entries, manifests };
}

let building: Promise<IdtBuild> | undefined;

/**
 * Builds the current sources (esbuild, about a second) into a folder laid
 * out as an installed idt, once per test file, in the run's scratch folder
 * (removed when the run ends). A spawned `idt` then starts as fast as the
 * published binary: no TypeScript loader in the process, and one instance of
 * each package shared by the binary and a config file's `@idt/*` imports
 * (code splitting), as in an install.
 */
export function buildIdt(): Promise<IdtBuild> {
  // Under the repository (test/.tmp/), so what the sources resolve at run time (nodemailer, tsx, the API reference's script) is found.
  building ??= buildIdtAt(mkdtempSync(join(inject('scratchDir'), 'idt-build-')));
  return building;
}

/**
 * Builds the current sources into `dir`, laid out as {@link buildIdt}'s build.
 * The npm packages it imports are written as absolute paths into the
 * repository's `node_modules`, except those of `bare`, which stay bare
 * specifiers resolved from `dir` upward at run time: in a `dir` outside the
 * repository, they are missing as in an install without them.
 */
export function buildIdtAt(dir: string, options: { readonly bare?: readonly string[] } = {}): Promise<IdtBuild> {
  const bare = new Set(options.bare ?? []);
  // Imports of these packages stay bare specifiers, resolved at run time from `dir` upward as an install resolves them.
  const bareImports = {
    name: 'bare-imports',
    setup(pluginBuild: PluginBuild) {
      pluginBuild.onResolve({ filter: /^[^./]/ }, (args) =>
        bare.has(args.path.split('/')[0] ?? '') ? { path: args.path, external: true } : undefined,
      );
    },
  };
  return (async () => {
    const { entries, manifests } = packageEntries();
    await build({
      entryPoints: { ...entries, bin: join(ROOT, 'packages/cli/src/bin.ts') },
      outdir: dir,
      chunkNames: 'chunks/[name]-[hash]',
      bundle: true,
      splitting: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      tsconfig: join(ROOT, 'tsconfig.json'),
      logLevel: 'warning',
      plugins: [bareImports, externalNpmDependencies],
    });
    writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
    for (const [name, exports] of manifests) {
      writeFileSync(join(dir, 'node_modules', name, 'package.json'), `${JSON.stringify({ name, type: 'module', exports })}\n`);
    }
    return { dir, bin: join(dir, 'bin.js'), scope: join(dir, 'node_modules', '@idt') };
  })();
}
