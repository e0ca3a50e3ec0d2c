import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrationSetsOf } from '@idt/core';
import { migrationStatus } from '@idt/core/knex';
import { identity } from '@idt/identity';
import { oidc } from '@idt/oidc';
import { createTestDatabase, referenceMigrationSets, startTestServer, type TestDatabase, type TestServer } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProgram } from '../src/cli.js';
import { createIo } from '../src/io.js';
import { installIdt, ROOT, spawnProcess, testEnv } from './support.js';

/**
 * A fenced block of a documentation page: ```sh tested [exit=N]``` blocks
 * run, in order, in one working directory; ```<lang> file=<name>``` blocks
 * are written there first.
 */
interface DocBlock {
  readonly line: number;
  readonly language: string;
  readonly tested: boolean;
  readonly exit: number;
  readonly file: string | undefined;
  readonly body: string;
}

function blocksOf(page: string): DocBlock[] {
  const markdown = readFileSync(join(ROOT, page), 'utf8');
  return [...markdown.matchAll(/^```(\S*)([^\n]*)\n([\s\S]*?)^```$/gm)].map((match) => {
    const words = (match[2] ?? '').trim().split(/\s+/);
    const option = (name: string) => words.find((word) => word.startsWith(`${name}=`))?.slice(name.length + 1);
    return {
      line: markdown.slice(0, match.index).split('\n').length,
      language: match[1] ?? '',
      tested: words.includes('tested'),
      exit: Number(option('exit') ?? 0),
      file: option('file'),
      body: match[3] ?? '',
    };
  });
}

/** The commands of `idt`. */
const commands = createProgram(createIo({}))
  .commands.map((command) => command.name())
  .filter((name) => name !== 'help');

describe('docs/cli.md', () => {
  const blocks = blocksOf('docs/cli.md');
  const tested = blocks.filter((block) => block.tested).map((block) => block.body);

  it.each(commands)('documents idt %s in a section', (command) => {
    expect(readFileSync(join(ROOT, 'docs/cli.md'), 'utf8')).toContain(`## \`idt ${command}\``);
  });

  // `idt serve` runs until stopped; spawned.test.ts runs it.
  it.each(commands.filter((command) => command !== 'serve'))('has a tested example of idt %s', (command) => {
    expect(tested.some((body) => new RegExp(`(^|[\\s|;])(npx )?idt ${command}\\b`, 'm').test(body))).toBe(true);
  });
});

describe('the migration counts of docs/cli.md', () => {
  const page = readFileSync(join(ROOT, 'docs/cli.md'), 'utf8');
  const count = (owners: readonly string[]) =>
    referenceMigrationSets.filter((set) => owners.includes(set.owner)).reduce((sum, set) => sum + set.migrations.length, 0);
  const identityOidc = migrationSetsOf([identity(), oidc()]).map((set) => set.owner);

  it('counts each package’s migrations as the code does', () => {
    const counted = [...page.matchAll(/(\d+) of\s+`(@idt\/[a-z-]+)`/g)].map(([, n, owner]) => [owner, Number(n)]);
    expect(Object.fromEntries(counted)).toEqual(
      Object.fromEntries(referenceMigrationSets.map((set) => [set.owner, set.migrations.length])),
    );
  });

  it('counts the migrations of identity and oidc, and of the reference modules, as the code does', () => {
    expect(Number(/(\d+) for a composition\s+of\s+identity\s+and\s+oidc/.exec(page)?.[1])).toBe(count(identityOidc));
    expect(Number(/(\d+)\s+in\s+all/.exec(page)?.[1])).toBe(count(referenceMigrationSets.map((set) => set.owner)));
    // The examples: a refused command on a database of identity and oidc, and `idt migrate --json` on one.
    expect(Number(/The database has (\d+) pending migration/.exec(page)?.[1])).toBe(count(identityOidc));
    expect(Number(/"modules": \["identity", "oidc"\], "applied": (\d+)/.exec(page)?.[1])).toBe(count(identityOidc));
  });
});

// One engine is enough to keep the pages true (each example spawns the binary); the suites
// beside this one run the same commands on SQLite and PostgreSQL.
for (const page of ['docs/cli.md', 'docs/seed-file.md']) {
  describe(`the examples of ${page}`, () => {
    const blocks = blocksOf(page);
    let database: TestDatabase;
    let server: TestServer | undefined;
    let dir: string;
    let env: Record<string, string>;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'idt-docs-'));
      // The working directory is a project with idt installed: `idt` on the PATH, and the real npx finds it.
      const binary = await installIdt(dir);
      database = await createTestDatabase('sqlite');
      env = {
        ...testEnv(database.url, dir),
        ...binary.env,
        PATH: `${binary.bin}:${process.env.PATH ?? ''}`,
        // docs/cli.md says its examples run with ADMIN_PASSWORD set; seed-file.md sets what it needs itself.
        ...(page === 'docs/cli.md' ? { ADMIN_PASSWORD: 'correct horse battery staple' } : {}),
      };
    });
    afterAll(async () => {
      await server?.close();
      await database.destroy();
      rmSync(dir, { recursive: true, force: true });
    });

    it.each(blocks.filter((block) => block.tested || block.file).map((block) => [`line ${block.line}`, block] as const))(
      'runs the example at %s',
      async (_where, block) => {
        if (block.file) {
          writeFileSync(join(dir, block.file), block.body);
          return;
        }
        // The reference server listens as soon as the database is migrated, so examples can call it.
        if (!server && (await migrationStatus(database.db, referenceMigrationSets)).every((set) => set.pending.length === 0)) {
          server = await startTestServer({ database });
          env = { ...env, IDT_ISSUER: server.origin };
        }
        const result = await spawnProcess('sh', ['-e', '-c', block.body], { env, cwd: dir });
        // The message carries what the command printed, so a failure in CI says why.
        expect(result.exitCode, `exit ${result.exitCode}; stderr: ${result.stderr}; stdout: ${result.stdout}`).toBe(block.exit);
        if (block.exit === 0) expect(result.stderr).not.toMatch(/^error:/m);
      },
      60_000,
    );
  });
}
