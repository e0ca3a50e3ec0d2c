import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, oidcClient, redeemCode, SETUP_ADMIN, signIn } from '@idt/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { quickInstallEnv, ROOT, userEnv } from './support/pack.js';
import { createPostgresDatabase } from './support/postgres.js';

/**
 * docs/embedding.md as a new team walks it: the commands of its install
 * section, run as written (`npm run pack:packages` in the checkout, the
 * `npm install` lines in an empty project), then each recipe written to a
 * file as shown and started on a fresh SQLite file and on a fresh PostgreSQL
 * database, and a sign-in through it with openid-client.
 *
 * The page marks what runs with an HTML comment before the block:
 * - `<!-- test: sh checkout -->`: commands run in the checkout;
 * - `<!-- test: sh install -->`: commands run in the project (`$IDT` is the checkout);
 * - `<!-- test: file <name> -->`: a file written to the project;
 * - `<!-- test: recipe <name> [path=/idt] [migrate] -->`: a server written to the project and started,
 *   answering under `path`; with `migrate`, it refuses a fresh database (`<!-- test: refused <name> -->`
 *   shows how) until the `<!-- test: sh migrate -->` commands ran;
 * - `<!-- test: refused <name> -->`: the command that starts the server and what it prints, refused.
 *
 * npm runs with settings that only make it quicker (`quickInstallEnv`: npm's cache first, the
 * repository's better-sqlite3 addon instead of a compile); the commands are the page's.
 */

const PAGE = 'docs/embedding.md';

/** A marked block of the page. */
interface Block {
  readonly line: number;
  /** The marker's words: `sh install`, `recipe express.ts path=/idt`. */
  readonly words: readonly string[];
  readonly body: string;
}

function blocksOf(page: string): Block[] {
  const markdown = readFileSync(join(ROOT, page), 'utf8');
  return [...markdown.matchAll(/^<!-- test: ([^\n]*?) -->\n```[^\n]*\n([\s\S]*?)^```$/gm)].map((match) => ({
    line: markdown.slice(0, match.index).split('\n').length,
    words: (match[1] ?? '').trim().split(/\s+/),
    body: match[2] ?? '',
  }));
}

/** A recipe: a server file of the page. */
interface Recipe {
  readonly file: string;
  /** Where idt answers under the origin: `/idt`, or `` at the root. */
  readonly path: string;
  /** Whether it keeps `migrations: 'check'`: refused on a fresh database until migrated with the CLI. */
  readonly migrate: boolean;
  readonly line: number;
}

const blocks = blocksOf(PAGE);
const shell = (where: string) => blocks.filter((block) => block.words[0] === 'sh' && block.words[1] === where);
const recipes: Recipe[] = blocks
  .filter((block) => block.words[0] === 'recipe')
  .map((block) => ({
    file: block.words[1] ?? '',
    path: block.words.find((word) => word.startsWith('path='))?.slice('path='.length) ?? '',
    migrate: block.words.includes('migrate'),
    line: block.line,
  }));

/** The output of a finished command. */
interface Finished {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function runShell(script: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 300_000): Promise<Finished> {
  return new Promise((done, fail) => {
    const child = spawn('sh', ['-e', '-c', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    // Real I/O: a guard against a command that never ends.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`Timed out: ${script}\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.once('error', fail);
    child.once('close', (exitCode) => {
      clearTimeout(timer);
      done({ exitCode, stdout, stderr });
    });
  });
}

/** A started recipe. */
interface Running {
  readonly output: () => string;
  stop(): Promise<void>;
}

/** Starts a recipe as the page says (`node server.mjs`, `node --import tsx server.ts`) and waits for its discovery document. */
async function startRecipe(recipe: Recipe, cwd: string, env: NodeJS.ProcessEnv, issuer: string): Promise<Running> {
  const args = recipe.file.endsWith('.ts') ? ['--import', 'tsx', recipe.file] : [recipe.file];
  const child: ChildProcess = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    // Real I/O: give it five seconds to exit before it is killed.
    await Promise.race([exited, new Promise((done) => setTimeout(done, 5000))]);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const response = await fetch(`${issuer}/.well-known/openid-configuration`);
      if (response.status === 200) return { output: () => output, stop };
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`${recipe.file} did not start (exit ${child.exitCode}):\n${output}`);
    }
    // Real I/O: the next try to reach the recipe's server while its process starts.
    await new Promise((done) => setTimeout(done, 250));
  }
}

/** A fresh database of one engine for one start. */
interface FreshDatabase {
  readonly url: string;
  /** The tables in it (Postgres) or whether its file exists (SQLite): what a refused start must leave untouched. */
  leftovers(): Promise<string[]>;
  drop(): Promise<void>;
}

const adminUrl = inject('postgresAdminUrl');
const dialects = adminUrl ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

describe(`${PAGE}, as written: installed from the checkout, each recipe started and signed in through`, () => {
  let scratch = '';
  let project = '';
  let baseEnv: NodeJS.ProcessEnv = {};
  let counter = 0;

  /** A fresh SQLite file (relative to the project, as the page's URLs are) or a fresh Postgres database. */
  async function freshDatabase(dialect: 'sqlite' | 'postgres'): Promise<FreshDatabase> {
    if (dialect === 'sqlite') {
      // In ./data, the data directory of idt and of the CLI alike (the CLI's is the SQLite file's directory).
      const relative = `./data/fresh-${++counter}.sqlite`;
      const files = ['', '-wal', '-shm', '-journal'].map((suffix) => resolve(project, `${relative}${suffix}`));
      return {
        url: `sqlite:${relative}`,
        leftovers: async () => files.filter((file) => existsSync(file)),
        drop: async () => {
          for (const file of files) rmSync(file, { force: true });
        },
      };
    }
    const created = await createPostgresDatabase(adminUrl);
    return {
      url: created.url,
      async leftovers() {
        const client = new pg.Client({ connectionString: created.url });
        await client.connect();
        try {
          const { rows } = await client.query<{ name: string }>(
            "select tablename as name from pg_tables where schemaname not in ('pg_catalog', 'information_schema')",
          );
          return rows.map((row) => row.name);
        } finally {
          await client.end();
        }
      },
      drop: created.drop,
    };
  }

  /** The environment a recipe (and the CLI beside it) runs in: Development, as the page says for trying it out. */
  function recipeEnv(database: FreshDatabase, port: number): NodeJS.ProcessEnv {
    return {
      ...baseEnv,
      IDT_ENVIRONMENT: 'Development',
      IDT_DATABASE_URL: database.url,
      IDT_ISSUER: `http://localhost:${port}`,
      IDT_LOG_LEVEL: 'warn',
      PORT: String(port),
    };
  }

  beforeAll(async () => {
    scratch = realpathSync(mkdtempSync(join(tmpdir(), 'idt-embedding-docs-')));
    project = join(scratch, 'app');
    mkdirSync(project);
    baseEnv = userEnv({ ...(await quickInstallEnv(join(scratch, 'prebuilds'))), IDT: ROOT });
    for (const block of shell('checkout')) {
      const result = await runShell(block.body, ROOT, baseEnv, 600_000);
      expect({ line: block.line, exitCode: result.exitCode, stderr: result.stderr }).toMatchObject({ exitCode: 0 });
    }
    for (const block of blocks) {
      const [kind, name] = block.words;
      if ((kind === 'file' || kind === 'recipe') && name) writeFileSync(join(project, name), block.body);
      if (kind === 'sh' && block.words[1] === 'install') {
        const result = await runShell(block.body, project, baseEnv);
        expect({ line: block.line, exitCode: result.exitCode, stderr: result.stderr }).toMatchObject({ exitCode: 0 });
      }
    }
  }, 900_000);

  afterAll(() => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('marks the blocks it runs: the install commands, a config module and every recipe but Next.js', () => {
    expect(shell('checkout').map((block) => block.body.trim())).toEqual(['npm run pack:packages']);
    expect(shell('install').length).toBeGreaterThanOrEqual(3);
    expect(recipes.map((recipe) => recipe.file)).toEqual([
      'minimal-server.mjs',
      'server.mjs',
      'node-http.ts',
      'express.ts',
      'fastify.ts',
      'hono.ts',
    ]);
  });

  it('installs every @idt package from the tarballs of the checkout, none from the registry', () => {
    const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as {
      type?: string;
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    expect(manifest.type).toBe('module');
    const idt = Object.entries({ ...manifest.dependencies, ...manifest.devDependencies }).filter(([name]) =>
      name.startsWith('@idt/'),
    );
    expect(idt.map(([name]) => name).sort()).toEqual(['@idt/cli', '@idt/core', '@idt/identity', '@idt/oidc', '@idt/problem']);
    for (const [name, spec] of idt) {
      expect(spec).toMatch(/^file:/);
      expect(resolve(project, spec.slice('file:'.length))).toBe(
        join(ROOT, 'dist-packages', `${name.replace('@idt/', 'idt-')}.tgz`),
      );
      const installed = JSON.parse(readFileSync(join(project, 'node_modules', name, 'package.json'), 'utf8')) as {
        version: string;
      };
      const source = JSON.parse(readFileSync(join(ROOT, 'packages', name.slice('@idt/'.length), 'package.json'), 'utf8')) as {
        version: string;
      };
      expect({ name, version: installed.version }).toEqual({ name, version: source.version });
    }
  });

  describe.each(dialects)('on a fresh %s database', (dialect) => {
    it.each(recipes.map((recipe) => [`${recipe.file} (line ${recipe.line})`, recipe] as const))(
      'starts %s as written and signs in through it with openid-client',
      async (_name, recipe) => {
        const database = await freshDatabase(dialect);
        const port = await freePort();
        const env = recipeEnv(database, port);
        const issuer = `http://localhost:${port}${recipe.path}`;
        let running: Running | undefined;
        try {
          if (recipe.migrate) {
            // Refused with the page's one line, no stack, and nothing created; then migrated with the page's commands.
            const refused = blocks.find((block) => block.words[0] === 'refused' && block.words[1] === recipe.file);
            const [prompt, ...printed] = (refused?.body ?? '').trimEnd().split('\n');
            expect(prompt).toMatch(/^\$ /);
            const result = await runShell(prompt?.slice(2) ?? '', project, env, 60_000);
            expect({ exitCode: result.exitCode, stdout: result.stdout, stderr: result.stderr.trimEnd() }).toEqual({
              exitCode: 1,
              stdout: '',
              stderr: printed.join('\n'),
            });
            expect(await database.leftovers()).toEqual([]);
            for (const block of shell('migrate')) {
              const migrated = await runShell(block.body, project, env, 120_000);
              expect({ line: block.line, exitCode: migrated.exitCode, stderr: migrated.stderr }).toMatchObject({ exitCode: 0 });
              expect(migrated.stderr).not.toMatch(/^error:/m);
            }
          }
          running = await startRecipe(recipe, project, env, issuer);

          const setup = await fetch(`${issuer}/v1/identity/setup/admin`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(SETUP_ADMIN),
          });
          expect(setup.status, await setup.clone().text()).toBe(201);
          const { userId, organizationId } = (await setup.json()) as { userId: string; organizationId: string };

          // The relying party, registered with the installed command line and the page's config module.
          const redirectUri = 'https://portal.example.com/callback';
          const registered = await runShell(
            `npx idt register-client --config ./idt.config.mjs --org ${organizationId} --kind application --name Portal --scope openid --scope profile --scope email --scope offline_access --redirect-uri ${redirectUri} --json`,
            project,
            env,
            60_000,
          );
          expect({ exitCode: registered.exitCode, stderr: registered.stderr }).toMatchObject({ exitCode: 0 });
          const { client, clientSecret } = JSON.parse(registered.stdout) as {
            client: { clientId: string };
            clientSecret: string;
          };

          const config = await oidcClient.discovery(
            new URL(issuer),
            client.clientId,
            { id_token_signed_response_alg: 'RS256' },
            oidcClient.ClientSecretPost(clientSecret),
            { execute: [oidcClient.allowInsecureRequests] },
          );
          expect(config.serverMetadata().issuer).toBe(issuer);
          const signedIn = await signIn(config, {
            redirectUri,
            scope: 'openid profile email offline_access',
            email: SETUP_ADMIN.email,
            password: SETUP_ADMIN.password,
          });
          const tokens = await redeemCode(config, signedIn);
          expect(tokens.claims()).toMatchObject({ sub: userId, iss: issuer });
          const userinfo = await oidcClient.fetchUserInfo(config, tokens.access_token, userId);
          expect(userinfo).toMatchObject({ sub: userId, email: 'ada@example.com', org_id: organizationId });
          const refreshed = await oidcClient.refreshTokenGrant(config, tokens.refresh_token ?? '');
          expect(refreshed.access_token).toBeTruthy();
        } catch (error) {
          throw new Error(`${(error as Error).message}\n--- ${recipe.file} printed:\n${running?.output() ?? ''}`, {
            cause: error,
          });
        } finally {
          await running?.stop();
          await database.drop();
        }
      },
      120_000,
    );
  });
});
