import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';
import { explainKeyDecryption, loadProjectEnv } from './project.js';

const dir = mkdtempSync(join(tmpdir(), 'idt-project-env-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('loadProjectEnv', () => {
  it('reads .env in the working directory under the environment, which wins', () => {
    const project = mkdtempSync(join(dir, 'p-'));
    writeFileSync(join(project, '.env'), 'IDT_ENVIRONMENT=Development\nIDT_DATABASE_URL=sqlite:./data/idt.sqlite\nPORT=9000\n');
    const loaded = loadProjectEnv({ cwd: project, env: { PORT: '8081' } });
    expect(loaded.envFile).toBe(join(project, '.env'));
    expect(loaded.directory).toBe(project);
    expect(loaded.env).toMatchObject({ IDT_ENVIRONMENT: 'Development', PORT: '8081' });
    expect([...loaded.fromFile].sort()).toEqual(['IDT_DATABASE_URL', 'IDT_ENVIRONMENT']);
  });

  it('reads no file without .env or with IDT_ENV_FILE=none, and refuses a named file that is missing', () => {
    expect(loadProjectEnv({ cwd: dir, env: {} })).toMatchObject({ envFile: undefined, directory: dir });
    const project = mkdtempSync(join(dir, 'none-'));
    writeFileSync(join(project, '.env'), 'IDT_ENVIRONMENT=Development\n');
    expect(loadProjectEnv({ cwd: project, env: { IDT_ENV_FILE: 'none' } }).envFile).toBeUndefined();
    expect(() => loadProjectEnv({ cwd: dir, env: { IDT_ENV_FILE: 'missing.env' } })).toThrow(ConfigError);
  });
});

describe('loadConfig with a project directory', () => {
  it('resolves the data directory and a relative SQLite file against it, and keeps local state beside the SQLite file', () => {
    const config = loadConfig(
      { IDT_ENVIRONMENT: 'Development', IDT_DATABASE_URL: 'sqlite:./db/idt.sqlite' },
      {},
      { baseDir: '/srv/app' },
    );
    expect(config.databaseUrl).toBe('sqlite:/srv/app/db/idt.sqlite');
    expect(config.dataDir).toBe('/srv/app/db');
    expect(config.mail.directory).toBe('/srv/app/db/mail');
    const postgres = loadConfig(
      { IDT_ENVIRONMENT: 'Development', IDT_DATABASE_URL: 'postgres://db/idt' },
      {},
      { baseDir: '/srv/app' },
    );
    expect(postgres.dataDir).toBe('/srv/app/data');
    const explicit = loadConfig({ IDT_ENVIRONMENT: 'Development', IDT_DATA_DIR: 'state' }, {}, { baseDir: '/srv/app' });
    expect(explicit).toMatchObject({ dataDir: '/srv/app/state', databaseUrl: 'sqlite:/srv/app/state/idt.sqlite' });
  });

  it('requires in Production only the settings the caller uses', () => {
    const env = { IDT_ENVIRONMENT: 'Production' };
    expect(() => loadConfig(env)).toThrow(/IDT_KEY_ENCRYPTION_SECRET[\s\S]*IDT_SMTP_URL/);
    expect(() => loadConfig(env, {}, { requires: { mail: false } })).toThrow(/IDT_KEY_ENCRYPTION_SECRET/);
    expect(() => loadConfig(env, {}, { requires: { mail: false, keyEncryptionSecret: false } })).not.toThrow();
  });

  it('names the env file a bad value came from', () => {
    const origin = { envFile: '/srv/app/.env', fromFile: new Set(['IDT_ISSUER']) };
    expect(() => loadConfig({ IDT_ENVIRONMENT: 'Development', IDT_ISSUER: 'nope' }, {}, { origin })).toThrow(
      'IDT_ISSUER: "nope" is not an absolute URL (set in /srv/app/.env)',
    );
  });
});

describe('explainKeyDecryption', () => {
  it('names the secret file of Development and the fix', () => {
    const error = new Error('Cannot decrypt a signing key: IDT_KEY_ENCRYPTION_SECRET differs from the one that encrypted it');
    const explained = explainKeyDecryption(error, {
      environment: 'Development',
      dataDir: '/srv/app/data',
      keyEncryptionSecret: undefined,
      databaseUrl: 'sqlite:/srv/app/data/idt.sqlite',
    }) as Error;
    expect(explained.message).toContain(
      'The secret was read from the Development secret file /srv/app/data/key-encryption.secret.',
    );
    expect(explained.message).toContain('Fix: use the data directory the database was created with');
    expect(
      explainKeyDecryption(new Error('other'), {
        environment: 'Development',
        dataDir: '.',
        keyEncryptionSecret: undefined,
        databaseUrl: '',
      }),
    ).toBeInstanceOf(Error);
  });
});
