import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { CONFIG_FILE_NAMES, findConfigFile, loadConfigFile } from '@idt/cli';
import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idt, jsonOf, ROOT, serviceAccountArgs, testEnv } from './support.js';

const PASSWORD = 'correct horse battery staple';
const ADMIN = ['--email', 'ada@example.com', '--first-name', 'Ada', '--last-name', 'Lovelace', '--organization', 'Acme'];

/** The owners of every migration set of the reference modules. */
const REFERENCE_OWNERS = [
  '@idt/core',
  '@idt/identity',
  '@idt/oidc',
  '@idt/inquiries',
  '@idt/storage',
  '@idt/notifications',
  '@idt/platform',
  '@idt/sso',
];

/** A config module composing the given factories (`identity`, `oidc`, ...), importing the packages by name. */
function configSource(modules: string[], extra = ''): string {
  const imports = modules.map((name) => `import { ${name} } from '@idt/${name}';`).join('\n');
  return `import { defineIdtConfig } from '@idt/core';\n${imports}\n\nexport default defineIdtConfig({ modules: [${modules
    .map((name) => `${name}()`)
    .join(', ')}]${extra} });\n`;
}

/**
 * A scratch project: a directory whose `node_modules` is the workspace's, so
 * its config files import `@idt/*` by name, as in a host that installed them.
 */
function project(prefix: string): { dir: string; write(path: string, content: string): string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return {
    dir,
    write(path, content) {
      const file = join(dir, path);
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, content);
      return file;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function tableNames(database: TestDatabase): Promise<string[]> {
  const names: string[] = [];
  for (const table of ['identity_users', 'oidc_clients', 'inquiries', 'storage_buckets', 'storage_files', 'sso_connections']) {
    if (await database.db.schema.hasTable(table)) names.push(table);
  }
  return names;
}

describe.each(testDialects())('an idt.config.mjs composing identity and oidc on %s', (dialect) => {
  let database: TestDatabase;
  let scratch: ReturnType<typeof project>;
  let env: Record<string, string>;

  beforeAll(async () => {
    scratch = project('idt-config-');
    scratch.write('idt.config.mjs', configSource(['identity', 'oidc']));
    database = await createTestDatabase(dialect);
    env = testEnv(database.url, scratch.dir);
  });
  afterAll(async () => {
    await database.destroy();
    scratch.remove();
  });

  it('migrates exactly core, identity and oidc, and nothing of the modules it does not compose', async () => {
    const cwd = scratch.dir;
    const status = jsonOf(await idt(env, ['migrate', '--status', '--json'], { cwd }));
    expect(status).toMatchObject({ ok: true, config: join(cwd, 'idt.config.mjs'), modules: ['identity', 'oidc'] });
    expect(status.sets.map((set: { owner: string }) => set.owner)).toEqual(['@idt/core', '@idt/identity', '@idt/oidc']);

    const migrated = await idt(env, ['migrate'], { cwd });
    expect(migrated.exitCode).toBe(0);
    expect(migrated.stderr).toContain('for identity, oidc (./idt.config.mjs)');
    expect(migrated.stdout).toContain('applied  @idt/oidc: 0001_provider');
    expect(migrated.stdout).not.toMatch(/@idt\/(inquiries|storage|notifications|platform)/);
    expect(await tableNames(database)).toEqual(['identity_users', 'oidc_clients']);

    // Every migration of the composition is applied, so commands outside Testing accept the database.
    const production = { ...env, IDT_ENVIRONMENT: 'Development' };
    const after = await idt(production, ['migrate', '--status'], { cwd });
    expect(after.stdout).toContain('Modules:  identity, oidc (./idt.config.mjs)');
    expect(after.stdout).toContain('Every migration is applied.');
  });

  it('sets up and registers a client through the composition, outside Testing too', async () => {
    const cwd = scratch.dir;
    const development = { ...env, IDT_ENVIRONMENT: 'Development' };
    const setup = await idt(development, ['setup', ...ADMIN, '--password-stdin'], { cwd, stdin: `${PASSWORD}\n` });
    expect(setup.exitCode).toBe(0);
    const registered = await idt(development, serviceAccountArgs('Reporting', '--json'), { cwd });
    expect(registered.stderr).toBe('');
    expect(registered.exitCode).toBe(0);
    expect(jsonOf(registered)).toMatchObject({ ok: true, client: { clientId: 'sa-acme-reporting', kind: 'service-account' } });
    expect(await database.db('oidc_clients').where({ client_id: 'sa-acme-reporting' }).first()).toBeDefined();
  });
});

describe('config discovery', () => {
  let scratch: ReturnType<typeof project>;
  const databases: TestDatabase[] = [];
  const freshEnv = async () => {
    const database = await createTestDatabase('sqlite');
    databases.push(database);
    return { database, env: testEnv(database.url, scratch.dir) };
  };

  beforeAll(() => {
    scratch = project('idt-discovery-');
  });
  afterAll(async () => {
    for (const database of databases) await database.destroy();
    scratch.remove();
  });

  it('honours --config before or after the command, over an idt.config in the working directory', async () => {
    const cwd = join(scratch.dir, 'honoured');
    scratch.write('honoured/idt.config.mjs', configSource(['identity']));
    const custom = scratch.write('honoured/deploy/custom.mjs', configSource(['identity', 'oidc', 'storage']));
    const { env } = await freshEnv();

    const discovered = jsonOf(await idt(env, ['migrate', '--status', '--json'], { cwd }));
    expect(discovered).toMatchObject({ config: join(cwd, 'idt.config.mjs'), modules: ['identity'] });

    const after = jsonOf(await idt(env, ['migrate', '--status', '--json', '--config', 'deploy/custom.mjs'], { cwd }));
    expect(after).toMatchObject({ config: custom, modules: ['identity', 'oidc', 'storage'] });
    expect(after.sets.map((set: { owner: string }) => set.owner)).toEqual([
      '@idt/core',
      '@idt/identity',
      '@idt/oidc',
      '@idt/storage',
    ]);
    const before = await idt(env, ['--config', custom, 'migrate', '--json'], { cwd });
    expect(before.exitCode).toBe(0);
    expect(jsonOf(before).sets.map((set: { owner: string }) => set.owner)).toEqual(
      after.sets.map((set: { owner: string }) => set.owner),
    );
  });

  it('refuses a --config that names no file, with exit code 1, before touching the database', async () => {
    const { database, env } = await freshEnv();
    const missing = await idt(env, ['migrate', '--config', 'nowhere/idt.config.mjs'], { cwd: scratch.dir });
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toBe(
      `error: No config file at ${join(scratch.dir, 'nowhere/idt.config.mjs')} (--config nowhere/idt.config.mjs). (Cli.ConfigNotFound)\n`,
    );
    const json = await idt(
      env,
      ['--config', 'nowhere.mjs', 'register-client', '--org', 'acme', '--kind', 'service-account', '--name', 'X', '--json'],
      {
        cwd: scratch.dir,
      },
    );
    expect(json.exitCode).toBe(1);
    expect(jsonOf(json)).toMatchObject({ ok: false, error: { code: 'Cli.ConfigNotFound' } });
    expect(await tableNames(database)).toEqual([]);
  });

  it('uses the reference modules without a config file, and migrates every one of them', async () => {
    const cwd = join(scratch.dir, 'empty');
    mkdirSync(cwd);
    expect(await findConfigFile(cwd)).toBeUndefined();
    const { database, env } = await freshEnv();
    const migrated = await idt(env, ['migrate', '--json'], { cwd });
    expect(migrated.exitCode).toBe(0);
    expect(jsonOf(migrated)).toMatchObject({
      config: null,
      modules: ['identity', 'oidc', 'inquiries', 'storage', 'notifications', 'platform', 'sso'],
    });
    expect(jsonOf(migrated).sets.map((set: { owner: string }) => set.owner)).toEqual(REFERENCE_OWNERS);
    expect(await tableNames(database)).toEqual([
      'identity_users',
      'oidc_clients',
      'inquiries',
      'storage_buckets',
      'storage_files',
      'sso_connections',
    ]);
  });

  it('finds idt.config.ts first, and takes a function (also async) as the default export, with its database', async () => {
    const cwd = join(scratch.dir, 'typescript');
    scratch.write('typescript/idt.config.mjs', configSource(['identity']));
    const { database } = await freshEnv();
    scratch.write(
      'typescript/idt.config.ts',
      [
        "import { defineIdtConfig } from '@idt/core';",
        "import { identity } from '@idt/identity';",
        "import { oidc } from '@idt/oidc';",
        '',
        `const database: string = ${JSON.stringify(database.url)};`,
        'export default async () => defineIdtConfig({ modules: [identity(), oidc()], database });',
        '',
      ].join('\n'),
    );
    expect(await findConfigFile(cwd)).toBe(join(cwd, CONFIG_FILE_NAMES[0] ?? ''));
    // No IDT_DATABASE_URL: the database is the config file's.
    const env = { IDT_ENVIRONMENT: 'Testing', IDT_LOG_LEVEL: 'warn', IDT_DATA_DIR: cwd };
    const migrated = jsonOf(await idt(env, ['migrate', '--json'], { cwd }));
    expect(migrated).toMatchObject({ config: join(cwd, 'idt.config.ts'), modules: ['identity', 'oidc'] });
    expect(await tableNames(database)).toEqual(['identity_users', 'oidc_clients']);

    // --database wins over the config file's.
    const other = await freshEnv();
    const overridden = jsonOf(await idt(env, ['migrate', '--json', '--database', other.database.url], { cwd }));
    expect(overridden.applied).toBeGreaterThan(0);
    expect(await tableNames(other.database)).toEqual(['identity_users', 'oidc_clients']);
  });

  it("takes the config file's own knex instance as the database", async () => {
    const cwd = join(scratch.dir, 'own-knex');
    const { database } = await freshEnv();
    const filename = database.url.slice('sqlite:'.length);
    scratch.write(
      'own-knex/idt.config.mjs',
      [
        "import { defineIdtConfig } from '@idt/core';",
        "import { identity } from '@idt/identity';",
        "import knex from 'knex';",
        '',
        `const database = knex({ client: 'better-sqlite3', connection: { filename: ${JSON.stringify(filename)} }, useNullAsDefault: true });`,
        'export default defineIdtConfig({ modules: [identity()], database });',
        '',
      ].join('\n'),
    );
    // No IDT_DATABASE_URL: a knex instance (a function) was once ignored for the default SQLite file.
    const env = { IDT_ENVIRONMENT: 'Testing', IDT_LOG_LEVEL: 'warn', IDT_DATA_DIR: cwd };
    const migrated = await idt(env, ['migrate', '--json'], { cwd });
    expect(migrated.exitCode, migrated.stderr).toBe(0);
    expect(await tableNames(database)).toEqual(['identity_users']);
  });

  it('refuses commands whose modules the composition lacks, naming the module to add', async () => {
    const cwd = join(scratch.dir, 'identity-only');
    scratch.write('identity-only/idt.config.mjs', configSource(['identity']));
    const { database, env } = await freshEnv();
    expect((await idt(env, ['migrate'], { cwd })).exitCode).toBe(0);
    expect(await tableNames(database)).toEqual(['identity_users']);

    const register = await idt(env, serviceAccountArgs('Reporting'), { cwd });
    expect(register.exitCode).toBe(1);
    expect(register.stderr).toBe(
      [
        'error: idt register-client needs the oidc module, which ./idt.config.mjs does not compose. (Cli.ModuleMissing)',
        `  Add oidc() from @idt/oidc to the modules of ${join(cwd, 'idt.config.mjs')}.`,
        '',
      ].join('\n'),
    );
    expect(jsonOf(await idt(env, ['rotate-secret', 'sa-x', '--json'], { cwd })).error.code).toBe('Cli.ModuleMissing');
    expect(jsonOf(await idt(env, ['demo', '--json'], { cwd })).error.code).toBe('Cli.ModuleMissing');

    // A seed with clients needs oidc; one with an administrator and organizations only does not.
    const clients = scratch.write(
      'identity-only/clients.json',
      JSON.stringify({ clients: [{ name: 'App', redirectUris: ['https://a.example.com/cb'], scopes: ['openid'] }] }),
    );
    const refused = await idt(env, ['seed', '--file', clients, '--json'], { cwd });
    expect(jsonOf(refused).error).toMatchObject({ code: 'Cli.ModuleMissing', detail: expect.stringContaining('oidc') });
    const admin = scratch.write(
      'identity-only/admin.json',
      JSON.stringify({
        admin: { email: 'ada@example.com', password: PASSWORD, firstName: 'Ada', lastName: 'L', organizationName: 'Acme' },
        organizations: [{ name: 'Globex' }],
      }),
    );
    const seeded = await idt(env, ['seed', '--file', admin, '--json'], { cwd });
    expect(seeded.exitCode).toBe(0);
    expect(jsonOf(seeded).steps.map((step: { type: string; outcome: string }) => `${step.type} ${step.outcome}`)).toEqual([
      'admin created',
      'organization created',
    ]);
  });

  it('refuses a config file without the options of createIdt, or with a module missing what it requires', async () => {
    const { env } = await freshEnv();
    const cwd = scratch.dir;
    const cases: Array<[string, string, string]> = [
      ['no-default.mjs', 'export const modules = [];\n', 'has no default export'],
      ['no-modules.mjs', 'export default { database: "sqlite:x" };\n', 'must export the options of createIdt'],
      [
        'factory.mjs',
        "import { identity } from '@idt/identity';\nexport default { modules: [identity] };\n",
        'not an idt module at modules[0]; call the factory',
      ],
      ['throws.mjs', "throw new Error('boom');\n", 'could not be loaded: boom'],
      [
        'requires.mjs',
        "import { oidc } from '@idt/oidc';\nexport default { modules: [oidc()] };\n",
        'Module "oidc" requires the "identity" module',
      ],
    ];
    for (const [name, source, message] of cases) {
      const file = scratch.write(`invalid/${name}`, source);
      const result = await idt(env, ['migrate', '--config', file, '--json'], { cwd });
      expect({ name, exitCode: result.exitCode }).toEqual({ name, exitCode: 1 });
      expect(jsonOf(result).error).toMatchObject({ code: 'Cli.ConfigInvalid', detail: expect.stringContaining(message) });
    }
  });

  it('loads TypeScript through tsx where the runtime cannot, and says what to do without tsx', async () => {
    const file = scratch.write('tsx/idt.config.ts', `${configSource(['identity', 'oidc'])}export const port: number = 1;\n`);
    // A Node.js without type stripping refuses the extension; tsx's tsImport then loads the file.
    const unknownExtension = async () => {
      throw Object.assign(new TypeError(`Unknown file extension ".ts" for ${file}`), { code: 'ERR_UNKNOWN_FILE_EXTENSION' });
    };
    const loaded = await loadConfigFile(file, { native: unknownExtension });
    expect(loaded.modules.map((module) => module.id)).toEqual(['identity', 'oidc']);

    const error = await loadConfigFile(file, { native: unknownExtension, tsx: async () => undefined }).catch((caught) => caught);
    expect(error).toMatchObject({
      code: 'Cli.ConfigTypeScript',
      message: expect.stringContaining('tsx is not installed'),
      hints: ['Install tsx (npm install --save-dev tsx), or write the config as idt.config.mjs.'],
    });
  });

  it('names --config in the help of idt and of every command', async () => {
    const help = await idt({}, ['--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain('--config <path>');
    expect(help.stdout).toContain('idt.config.ts');
    const command = await idt({}, ['migrate', '--help']);
    expect(command.stdout).toContain('--config <path>');
  });
});
