import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The first ```ts block of a page (after a heading, when given), as written. */
function snippet(page: string, heading?: string): string {
  const markdown = readFileSync(join(ROOT, page), 'utf8');
  const section = heading ? markdown.slice(markdown.indexOf(`## ${heading}\n`)) : markdown;
  const match = /^```ts\n([\s\S]*?)^```$/m.exec(section);
  if (!match?.[1]) throw new Error(`No ts block${heading ? ` under "${heading}"` : ''} in ${page}`);
  return match[1];
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

describe.each([
  ['docs/embedding.md', 'A minimal server'],
  ['examples/server/README.md', undefined],
] as const)('the server of %s runs as written', (page, heading) => {
  let child: ChildProcess;
  let base: string;
  let output = '';
  const scratch = join(ROOT, 'test', '.tmp');
  const dataDir = mkdtempSync(join(tmpdir(), 'idt-snippet-'));

  beforeAll(async () => {
    mkdirSync(scratch, { recursive: true });
    const file = join(scratch, `snippet-${process.pid}-${page.replace(/\W/g, '-')}.ts`);
    writeFileSync(file, snippet(page, heading));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    // tsx resolves the @idt/* imports to the sources through tsconfig.json's paths.
    child = spawn(process.execPath, ['--import', 'tsx', file], {
      cwd: ROOT,
      env: {
        ...process.env,
        IDT_ENVIRONMENT: 'Development',
        IDT_DATABASE_URL: `sqlite:${join(dataDir, 'idt.sqlite')}`,
        IDT_ISSUER: base,
        PORT: String(port),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (chunk) => {
      output += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      output += chunk;
    });
    const deadline = Date.now() + 45_000;
    for (;;) {
      try {
        if ((await fetch(`${base}/health`)).ok) break;
      } catch {
        // not listening yet
      }
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`The snippet did not start:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }, 60_000);

  afterAll(() => {
    child?.kill('SIGTERM');
    rmSync(join(scratch, `snippet-${process.pid}-${page.replace(/\W/g, '-')}.ts`), { force: true });
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves setup mode: status, the 503 gate, the first administrator, then 404 for unknown paths', async () => {
    expect(await (await fetch(`${base}/v1/identity/setup/status`)).json()).toEqual({ setupRequired: true });
    const gated = await fetch(`${base}/v1/anything`);
    expect(gated.status).toBe(503);
    expect(((await gated.json()) as { code: string }).code).toBe('Setup.Required');
    const created = await fetch(`${base}/v1/identity/setup/admin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        email: 'ada@example.com',
        password: 'correct horse battery staple',
        firstName: 'Ada',
        lastName: 'Lovelace',
        organizationName: 'Analytical Engines',
      }),
    });
    expect(created.status).toBe(201);
    expect(await (await fetch(`${base}/v1/identity/setup/status`)).json()).toEqual({ setupRequired: false });
    expect((await fetch(`${base}/v1/nope`)).status).toBe(404);
    expect((await fetch(`${base}/health/ready`)).status).toBe(200);
  });
});
