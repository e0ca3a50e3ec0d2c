import { readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const root = fileURLToPath(new URL('.', import.meta.url));

/** Maps every workspace package (and its subpath entries) to its TypeScript sources, so tests never need a build. */
function sourceAliases() {
  const aliases: Array<{ find: RegExp; replacement: string }> = [];
  for (const dir of ['packages', 'examples']) {
    for (const name of readdirSync(new URL(dir, import.meta.url))) {
      let manifest: { name?: string; exports?: Record<string, unknown> };
      try {
        manifest = JSON.parse(readFileSync(new URL(`${dir}/${name}/package.json`, import.meta.url), 'utf8'));
      } catch {
        continue;
      }
      if (!manifest.name) continue;
      const escaped = manifest.name.replace(/[/\\^$*+?.()|[\]{}]/g, '\\$&');
      aliases.push({ find: new RegExp(`^${escaped}$`), replacement: `${root}${dir}/${name}/src/index.ts` });
      aliases.push({ find: new RegExp(`^${escaped}/([a-z-]+)$`), replacement: `${root}${dir}/${name}/src/$1.ts` });
    }
  }
  aliases.push({ find: /^@idt\/testing$/, replacement: `${root}test/support/index.ts` });
  return aliases;
}

export default defineConfig({
  resolve: { alias: sourceAliases() },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'packages/*/test/**/*.test.ts', 'examples/*/test/**/*.test.ts', 'test/**/*.test.ts'],
    globalSetup: ['./test/global-setup.ts'],
    pool: 'forks',
    // One fork per core. Vitest's default outside watch mode is one fewer, which is a single fork on
    // a two-core machine; most files spend their time waiting on child processes, databases and
    // sockets, so a second fork takes the suite from about 13 to 9 minutes on two cores.
    maxWorkers: availableParallelism(),
    testTimeout: 30_000,
    hookTimeout: 60_000,
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
