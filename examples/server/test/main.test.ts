import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = new URL('../../../', import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), 'idt-main-'));
const children: ChildProcess[] = [];

afterAll(() => {
  for (const child of children) child.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

function run(command: string, env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'examples/server/src/main.ts', command], {
    cwd: root,
    env: { ...process.env, IDT_DATABASE_URL: `sqlite:${join(dir, 'idt.sqlite')}`, IDT_LOG_LEVEL: 'warn', PORT: '0', ...env },
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const output = () => ({ stdout, stderr });
  const waitFor = async (pattern: RegExp) => {
    for (let i = 0; i < 200; i++) {
      const match = pattern.exec(stdout);
      if (match) return match;
      if (child.exitCode !== null) break;
      // Real I/O: the next look at the server process's output.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`"${pattern}" never appeared:\n${stdout}\n${stderr}`);
  };
  return { child, exited, output, waitFor };
}

const production = {
  IDT_ENVIRONMENT: 'Production',
  IDT_KEY_ENCRYPTION_SECRET: 'k'.repeat(40),
  IDT_SMTP_URL: 'smtp://127.0.0.1:2525',
};

describe('reference server entry point', () => {
  it('refuses to start outside Testing while migrations are pending, naming idt migrate', async () => {
    const serve = run('serve', production);
    expect(await serve.exited).toBe(1);
    expect(serve.output().stderr).toContain('idt migrate');
    expect(serve.output().stderr).toContain('@idt/identity: 0001_accounts');
  });

  it('migrates, then serves and prints the URL and the setup state', async () => {
    const migrate = run('migrate', production);
    expect(await migrate.exited).toBe(0);
    expect(migrate.output().stdout).toMatch(/Migrations: \d+ applied/);
    const serve = run('serve', production);
    const [, url] = await serve.waitFor(/listening on (http:\/\/\S+)/);
    await serve.waitFor(/Setup required: yes/);
    const response = await fetch(`${url}/v1/identity/setup/status`);
    expect(await response.json()).toEqual({ setupRequired: true });
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
  });

  it('refuses invalid configuration with every problem listed', async () => {
    const serve = run('serve', { IDT_ENVIRONMENT: 'Production', IDT_ISSUER: 'nope' });
    expect(await serve.exited).toBe(1);
    expect(serve.output().stderr).toContain('IDT_ISSUER');
    expect(serve.output().stderr).toContain('IDT_KEY_ENCRYPTION_SECRET');
  });
});
