import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idt, ROOT, spawnProcess } from './support.js';

/**
 * `idt serve` and the reference server (`npm start`) on a port another
 * process holds: the same line with the same code, each with its own way
 * to choose another port; exit code 1 and no stack.
 */
describe('a port in use, for idt serve and for npm start', () => {
  let dir: string;
  let taken: Server;
  let port: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'idt-port-'));
    taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    port = (taken.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => taken.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  const line = () => `error: Port ${port} on 127.0.0.1 is already in use by another process. (Server.PortInUse)`;

  it('idt serve names the port and --port', async () => {
    const env = {
      IDT_ENVIRONMENT: 'Development',
      IDT_DATABASE_URL: `sqlite:${join(dir, 'cli.sqlite')}`,
      IDT_DATA_DIR: dir,
      IDT_LOG_LEVEL: 'warn',
    };
    expect((await idt(env, ['migrate'])).exitCode).toBe(0);
    const result = await idt(env, ['serve', '--port', String(port)]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr.trimEnd().split('\n')).toEqual([
      line(),
      '  Stop the process that listens there, or choose another port: --port 8080 (or PORT=8080); --port 0 picks a free one.',
    ]);
  });

  it('npm start (the reference server’s start) says the same, with PORT=… npm start, and no stack', async () => {
    const result = await spawnProcess(process.execPath, ['--import', 'tsx', 'examples/server/src/main.ts', 'start'], {
      cwd: ROOT,
      env: {
        IDT_ENVIRONMENT: 'Development',
        IDT_DATABASE_URL: `sqlite:${join(dir, 'server.sqlite')}`,
        IDT_DATA_DIR: dir,
        IDT_ENV_FILE: 'none',
        IDT_LOG_LEVEL: 'warn',
        PORT: String(port),
      },
    });
    expect(result.exitCode).toBe(1);
    expect(result.stderr.trimEnd().split('\n')).toEqual([
      line(),
      '  Stop the process that listens there, or choose another port: PORT=8080 npm start; PORT=0 npm start picks a free one.',
    ]);
    expect(result.stdout).not.toContain('listening');
  }, 60_000);
});
