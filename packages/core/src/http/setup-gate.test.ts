import { describe, expect, it } from 'vitest';
import type { Logger } from '../logger.js';
import '../problems.js';
import { createHttpApp } from './app.js';
import { json } from './responses.js';
import { defineRoute } from './route.js';
import {
  createSetupGate,
  isPathUnder,
  pathsUnder,
  SETUP_ALLOWLIST,
  SETUP_REQUIRED_DETAIL,
  setupRequiredDetail,
} from './setup-gate.js';

function recordingLogger() {
  const lines: Array<{ level: string; message: string; fields?: Record<string, unknown> }> = [];
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    void lines.push({ level, message, fields });
  const logger: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') } as Logger;
  return { logger, lines };
}

describe('the setup gate', () => {
  const route = defineRoute({
    method: 'GET',
    path: '/v1/me',
    operationId: 'me',
    summary: 'me',
    auth: 'anonymous',
    responses: { 200: { description: 'ok' } },
    handler: () => json({ ok: true }),
  });

  it('answers 503 Setup.Required with how to finish setup, and logs it once at warn level without a stack', async () => {
    let required = true;
    const { logger, lines } = recordingLogger();
    const app = createHttpApp({
      environment: 'Production',
      publicBaseUrl: 'http://api.test',
      routes: [route],
      gates: [createSetupGate({ isSetupRequired: async () => required })],
      logger,
    });
    for (let attempt = 0; attempt < 3; attempt++) {
      const response = await app.fetch(new Request('http://api.test/v1/me'));
      expect(response.status).toBe(503);
      const body = (await response.json()) as Record<string, any>;
      expect(body).toMatchObject({ code: 'Setup.Required', status: 503, detail: SETUP_REQUIRED_DETAIL });
      expect(body.detail).toContain('npx idt setup');
      expect(body.detail).toContain('POST /v1/identity/setup/admin');
      expect(body.exception).toBeUndefined();
    }
    expect(lines.filter((line) => line.level === 'error')).toEqual([]);
    const warnings = lines.filter((line) => line.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.message).toContain('npx idt setup');
    expect(JSON.stringify(warnings[0]?.fields)).not.toContain('stack');

    required = false;
    expect((await app.fetch(new Request('http://api.test/v1/me'))).status).toBe(200);
  });

  it('shows a browser a page with the same sentence, still 503, under a strict policy', async () => {
    const app = createHttpApp({
      environment: 'Development',
      publicBaseUrl: 'http://api.test',
      routes: [route],
      gates: [createSetupGate({ isSetupRequired: async () => true })],
    });
    const page = await app.fetch(new Request('http://api.test/', { headers: { accept: 'text/html,*/*' } }));
    expect(page.status).toBe(503);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.headers.get('retry-after')).toBe('10');
    const html = await page.text();
    expect(html).toContain('<h1>Setup is not finished</h1>');
    expect(html).toContain('Run `npx idt setup`');
    expect(html).not.toContain('<script');
    const body = (await (await app.fetch(new Request('http://api.test/v1/me'))).json()) as Record<string, any>;
    expect(body.code).toBe('Setup.Required');
    // Development shows no exception block for an expected state.
    expect(body.exception).toBeUndefined();
  });
});

describe('the setup gate under a path prefix', () => {
  it('names the setup route with the prefix, on the problem and on the page, and lets the icon through', async () => {
    const icon = defineRoute({
      method: 'GET',
      path: '/favicon.ico',
      operationId: 'icon',
      summary: 'icon',
      auth: 'anonymous',
      responses: { 200: { description: 'ok' } },
      handler: () => json({ icon: true }),
    });
    const app = createHttpApp({
      environment: 'Production',
      publicBaseUrl: 'http://api.test/idt',
      pathPrefix: '/idt',
      routes: [icon],
      gates: [createSetupGate({ isSetupRequired: async () => true })],
    });
    const response = await app.fetch(new Request('http://api.test/idt/v1/me'));
    expect(response.status).toBe(503);
    const body = (await response.json()) as Record<string, any>;
    expect(body.detail).toBe(setupRequiredDetail('/idt'));
    expect(body.detail).toContain('POST /idt/v1/identity/setup/admin with');
    expect(body.detail.match(/\S*\/v1\/identity\S*/g)).toEqual(['/idt/v1/identity/setup/admin']);
    const page = await app.fetch(new Request('http://api.test/idt/', { headers: { accept: 'text/html' } }));
    expect(page.status).toBe(503);
    const text = await page.text();
    expect(text).toContain('POST /idt/v1/identity/setup/admin');
    // The page names its icon inline, which its policy allows (a browser asks the origin's /favicon.ico otherwise).
    expect(text).toContain('<link rel="icon" type="image/svg+xml" href="data:image/svg+xml,');
    expect(page.headers.get('content-security-policy')).toContain('img-src data:');
    expect((await app.fetch(new Request('http://api.test/idt/favicon.ico'))).status).toBe(200);
  });
});

describe('pathsUnder', () => {
  it('answers as isPathUnder over any of its bases, segment-wise', () => {
    const allowed = pathsUnder(SETUP_ALLOWLIST);
    const paths = [
      '/health',
      '/health/ready',
      '/healthz',
      '/connect',
      '/connect/token',
      '/connector',
      '/',
      '',
      '/v1/identity/setup/admin',
      '/v1/identity',
      '/scalar/x',
      '/.well-known/openid-configuration',
    ];
    for (const path of paths) {
      expect(allowed(path), path).toBe(SETUP_ALLOWLIST.some((base) => isPathUnder(path, base)));
    }
    expect(pathsUnder([])('/anything')).toBe(false);
  });
});
