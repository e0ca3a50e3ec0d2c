// esbuild plugins for builds of the current sources that are not the
// packages' own (tsup) builds: the CLI tests' build of the binary
// (packages/cli/test/build.ts). The benchmark's bundle of the reference
// server holds its dependencies instead, as `npm start`'s does
// (scripts/server-bundle.mjs).

/**
 * Leaves npm dependencies as imports, each resolved at build time from the
 * importing package's folder and written as an absolute path, so the output
 * runs from any folder and every package keeps its own copy of a dependency
 * (packages/notifications has its own `ws` 8, while the root node_modules
 * holds another package's `ws` 7). Workspace packages (`@idt/*`) resolve as
 * usual, to their sources through the tsconfig paths, and are bundled.
 *
 * @type {import('esbuild').Plugin}
 */
export const externalNpmDependencies = {
  name: 'external-npm-dependencies',
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.path.startsWith('@idt/') || args.pluginData === 'resolving') return undefined;
      if (args.path.startsWith('node:')) return { path: args.path, external: true };
      const resolved = await pluginBuild.resolve(args.path, {
        kind: args.kind,
        resolveDir: args.resolveDir,
        pluginData: 'resolving',
      });
      return { path: resolved.errors.length || !resolved.path ? args.path : resolved.path, external: true };
    });
  },
};
