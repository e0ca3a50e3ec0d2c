/**
 * Hostile input never reaches a 5xx: every operation of the API document,
 * the OpenID provider's endpoints and the sign-in forms are sent NUL
 * characters, lone surrogates, invalid UTF-8, very long strings, wrong types,
 * traversal and huge numbers, on both databases. Values come from a seeded
 * generator, so a failure replays exactly.
 */

import {
  Browser,
  bootstrapAdmin,
  parseForms,
  registerClient,
  startTestServer,
  type TestAdmin,
  type TestClient,
  type TestServer,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** A small deterministic PRNG (mulberry32): the same seed gives the same requests. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Payload kinds that are bad bytes: they must be refused whatever the operation. */
const BYTE_KINDS = ['nul', 'surrogate', 'invalidUtf8', 'overlong'] as const;
/** Payload kinds that are well-formed text or JSON of the wrong shape. */
const SHAPE_KINDS = ['long', 'traversal', 'wrongType', 'hugeNumber', 'arrayForObject'] as const;
type Kind = (typeof BYTE_KINDS)[number] | (typeof SHAPE_KINDS)[number];
const KINDS: readonly Kind[] = [...BYTE_KINDS, ...SHAPE_KINDS];
const isByteKind = (kind: Kind) => (BYTE_KINDS as readonly Kind[]).includes(kind);

/** The parsed JSON of a body, or `undefined` when it is not JSON. */
function parsed(body: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(body) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/** A URL-ready (percent-encoded) hostile value; URLs stay under Node's 16 KiB header limit. */
function urlValue(kind: Kind): string {
  switch (kind) {
    case 'nul':
      return 'a%00b';
    case 'surrogate':
      return '%ED%A0%80';
    case 'invalidUtf8':
      return 'x%FFy';
    case 'overlong':
      return '%C0%AF';
    case 'long':
      return 'a'.repeat(8_000);
    case 'traversal':
      return '..%2F..%2Fetc%2Fpasswd';
    case 'wrongType':
      return 'true';
    case 'hugeNumber':
      return '1e400';
    case 'arrayForObject':
      return '%5B%5D';
  }
}

/** A hostile JSON value; byte kinds are placeholders replaced in the raw body (see {@link jsonBytes}). */
function jsonValue(kind: Kind): unknown {
  switch (kind) {
    case 'nul':
      return 'a\u0000b';
    case 'surrogate':
      return 'x\uD800y';
    case 'invalidUtf8':
      return '@@INVALID@@';
    case 'overlong':
      return '@@OVERLONG@@';
    case 'long':
      return 'a'.repeat(100_000);
    case 'traversal':
      return '../../etc/passwd';
    case 'wrongType':
      return { nested: [1, 2] };
    case 'hugeNumber':
      return 1e308;
    case 'arrayForObject':
      return [];
  }
}

/** The body bytes: JSON text with the invalid-UTF-8 placeholders turned into raw bad bytes. */
function jsonBytes(value: unknown): Uint8Array {
  const text = JSON.stringify(value);
  const parts = text.split(/(@@INVALID@@|@@OVERLONG@@)/);
  return Buffer.concat(
    parts.map((part) =>
      part === '@@INVALID@@'
        ? Buffer.from([0xff, 0xfe])
        : part === '@@OVERLONG@@'
          ? Buffer.from([0xc0, 0xaf])
          : Buffer.from(part, 'utf8'),
    ),
  );
}

/** A form body with one hostile field; the others keep their values. */
function formBody(fields: Record<string, string>, target: string, kind: Kind): string {
  return Object.entries(fields)
    .map(([name, value]) => `${name}=${name === target ? urlValue(kind) : encodeURIComponent(value)}`)
    .join('&');
}

type Schema = Record<string, unknown>;

interface Operation {
  readonly method: string;
  readonly path: string;
  readonly pathParams: string[];
  readonly queryParams: string[];
  readonly jsonBody?: Schema;
  readonly formBody?: Schema;
  /** The operation answers pages (`x-error-format: html`: a browser reads them), not problem documents. */
  readonly pages: boolean;
  /** The operation answers SCIM errors (`x-error-format: scim`: SCIM clients read those). */
  readonly scim: boolean;
}

function operationsOf(document: Schema): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, operation] of Object.entries(item)) {
      // The OpenID endpoints answer OAuth errors and pages, not problem documents; their byte checks are above.
      if (operation['x-error-format'] === 'oauth') continue;
      const parameters = (operation.parameters ?? []) as Array<{ name: string; in: string }>;
      const content = ((operation.requestBody as Schema | undefined)?.content ?? {}) as Record<string, { schema?: Schema }>;
      operations.push({
        method: method.toUpperCase(),
        path,
        pages: operation['x-error-format'] === 'html',
        scim: operation['x-error-format'] === 'scim',
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: parameters.filter((p) => p.in === 'query').map((p) => p.name),
        ...(content['application/json'] ? { jsonBody: content['application/json'].schema ?? {} } : {}),
        ...(content['application/x-www-form-urlencoded']
          ? { formBody: content['application/x-www-form-urlencoded'].schema ?? {} }
          : {}),
      });
    }
  }
  return operations;
}

/** A plausible value for a schema: enough for the request to reach the field checks. */
function sample(schema: Schema | undefined, document: Schema, depth = 0): unknown {
  if (!schema || depth > 6) return 'fuzz';
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.split('/').pop() as string;
    return sample((document.components as { schemas: Record<string, Schema> }).schemas[name], document, depth + 1);
  }
  for (const union of ['anyOf', 'oneOf', 'allOf'] as const) {
    const options = schema[union] as Schema[] | undefined;
    const first = options?.find((option) => option.type !== 'null');
    if (first) return sample(first, document, depth + 1);
  }
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>;
      return Object.fromEntries(Object.entries(properties).map(([key, value]) => [key, sample(value, document, depth + 1)]));
    }
    case 'array':
      return [sample(schema.items as Schema | undefined, document, depth + 1)];
    case 'integer':
    case 'number':
      return 1;
    case 'boolean':
      return true;
    default:
      if (schema.format === 'email') return 'fuzz@example.com';
      if (schema.format === 'uuid') return '0190a0a0-0000-7000-8000-000000000000';
      if (schema.format === 'uri') return 'https://example.com/callback';
      return 'fuzz';
  }
}

/** The paths (`['a', 0, 'b']`) of the leaves of a sampled value. */
function leaves(value: unknown, path: Array<string | number> = []): Array<Array<string | number>> {
  if (Array.isArray(value)) return value.flatMap((item, index) => leaves(item, [...path, index]));
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value);
    return entries.length === 0 ? [path] : entries.flatMap(([key, item]) => leaves(item, [...path, key]));
  }
  return [path];
}

function replaced(value: unknown, path: Array<string | number>, replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path as [string | number, ...Array<string | number>];
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string | number, unknown>;
  copy[head] = replaced(copy[head], rest, replacement);
  return copy;
}

/** Rows of the tables a rejected write must leave alone. */
const MAIN_TABLES = [
  'identity_users',
  'identity_organizations',
  'identity_memberships',
  'identity_membership_roles',
  'identity_roles',
  'identity_invitations',
  'identity_sessions',
  'identity_api_keys',
  'identity_email_changes',
  'identity_passwordless_requests',
  'oidc_clients',
  'oidc_consents',
  'oidc_scopes',
  'inquiries',
  'inquiries_comments',
  'storage_buckets',
  'storage_files',
];

/** A request the fuzzer sent, and what came back. */
interface Exchange {
  readonly label: string;
  readonly kind: Kind;
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

const MISSING_ID = '0190a0a0-0000-7000-8000-00000000dead';

describe.each(testDialects())('hostile input (%s)', (dialect) => {
  let server: TestServer;
  let admin: TestAdmin;
  let token: string;
  let client: TestClient;
  const redirectUri = 'http://127.0.0.1:9/callback';

  beforeAll(async () => {
    server = await startTestServer({ dialect });
    admin = await bootstrapAdmin(server);
    token = await admin.token();
    client = await registerClient(server, token, admin.organizationId, {
      kind: 'application',
      name: 'Fuzz',
      redirectUris: [redirectUri],
      scopes: ['openid', 'profile', 'email'],
    });
  });
  afterAll(async () => {
    await server?.close();
  });

  async function counts(): Promise<Record<string, number>> {
    const db = server.database.db;
    const entries = await Promise.all(
      MAIN_TABLES.map(async (table) => {
        const row = (await db(table).count({ n: '*' }).first()) as { n: number | string };
        return [table, Number(row.n)] as const;
      }),
    );
    return Object.fromEntries(entries);
  }

  async function send(label: string, kind: Kind, url: string, init: RequestInit = {}): Promise<Exchange> {
    const response = await fetch(url, { redirect: 'manual', ...init });
    return {
      label,
      kind,
      status: response.status,
      contentType: response.headers.get('content-type') ?? '',
      body: await response.text(),
    };
  }

  /** Fails with every exchange that broke a rule; `shape` says what a 4xx body must look like. */
  function check(exchanges: Exchange[], shape: (exchange: Exchange) => boolean) {
    const broken = exchanges.filter(
      (exchange) =>
        exchange.status >= 500 ||
        (isByteKind(exchange.kind) && exchange.status < 400) ||
        (exchange.status >= 400 && !shape(exchange)),
    );
    expect(
      broken.map((exchange) => `${exchange.label} [${exchange.kind}] → ${exchange.status} ${exchange.body.slice(0, 200)}`),
    ).toEqual([]);
  }

  const isProblem = (exchange: Exchange) => {
    const body = parsed(exchange.body);
    if (exchange.contentType.startsWith('application/problem+json')) return typeof body?.code === 'string';
    // The e-mail change confirmation answers its own short body (the link is opened from an e-mail).
    return exchange.label.includes('/confirm-email-change') && body?.succeeded === false && typeof body.error === 'string';
  };
  const isOAuthError = (exchange: Exchange) =>
    (exchange.contentType.startsWith('application/json') && typeof parsed(exchange.body)?.error === 'string') ||
    // A rate-limit refusal is a problem document that OAuth clients read as an error response too.
    (exchange.status === 429 &&
      exchange.contentType.startsWith('application/problem+json') &&
      parsed(exchange.body)?.code === 'RateLimit.Exceeded' &&
      parsed(exchange.body)?.error === 'rate_limit_exceeded') ||
    // oidc-provider renders an authorization error it cannot redirect as a page.
    exchange.contentType.startsWith('text/html');
  const isHtml = (exchange: Exchange) => exchange.contentType.startsWith('text/html');
  /** SCIM's error schema (RFC 7644 §3.12): its URN, and the status as a string. */
  const isScimError = (exchange: Exchange) => {
    const body = parsed(exchange.body) as { schemas?: unknown[]; status?: unknown } | undefined;
    return (
      exchange.contentType.startsWith('application/scim+json') &&
      body?.schemas?.[0] === 'urn:ietf:params:scim:api:messages:2.0:Error' &&
      typeof body.status === 'string'
    );
  };
  // A page that refuses says so in words: never a stack or a library's message.
  const isPage = (exchange: Exchange) => isHtml(exchange) && !/\bat \S+\.(?:ts|js):\d|Error:/.test(exchange.body);

  it('refuses the NUL requests that once reached the database with 400', async () => {
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const clients = `/v1/identity/organizations/${admin.organizationId}/clients/%00`;
    const api: Array<[string, string, string?]> = [
      ['GET', clients],
      ['DELETE', clients],
      ['POST', `${clients}/rotate-secret`, '{}'],
      ['POST', `${clients}/suspend`],
      ['POST', `${clients}/reinstate`],
      ['GET', `${clients}/branding`],
      ['DELETE', '/v1/identity/consents/%00'],
    ];
    for (const [method, path, body] of api) {
      const response = await server.fetch(path, { method, headers, ...(body ? { body } : {}) });
      expect([method, path, response.status]).toEqual([method, path, 400]);
      const problem = (await response.json()) as { code: string; errors: Record<string, string[]> };
      expect(problem.code).toBe('Validation.Failed');
      expect(Object.keys(problem.errors)).toEqual(['clientId']);
    }
    const tokenResponse = await server.fetch('/connect/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=a%00&client_secret=x',
    });
    expect(tokenResponse.status).toBe(400);
    expect(await tokenResponse.json()).toMatchObject({
      error: 'invalid_request',
      error_description: expect.stringContaining('client_id'),
    });
    const authorizeResponse = await server.fetch('/connect/authorize?client_id=%00&response_type=code', { redirect: 'manual' });
    expect(authorizeResponse.status).toBe(400);
    expect(await authorizeResponse.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('answers every API operation with a problem document and writes nothing', async () => {
    const document = (await (await server.fetch('/openapi/v1.json')).json()) as Schema;
    const operations = operationsOf(document);
    expect(operations.length).toBeGreaterThan(40);
    const random = prng(0x1d7);
    const headers = { authorization: `Bearer ${token}` };
    const paramValue = (param: string, method: string) =>
      // The admin's own organization gets past the tenant checks; nothing else exists, so no write can land.
      param === 'orgId' && method !== 'DELETE' ? admin.organizationId : MISSING_ID;

    for (const operation of operations) {
      const before = await counts();
      const exchanges: Exchange[] = [];
      const pathWith = (target?: string, kind?: Kind) =>
        operation.path.replace(/\{(\w+)\}/g, (_, name: string) =>
          name === target && kind ? urlValue(kind) : paramValue(name, operation.method),
        );
      const label = `${operation.method} ${operation.path}`;
      const jsonHeaders = { ...headers, 'content-type': 'application/json' };
      const base = operation.jsonBody ? sample(operation.jsonBody, document) : undefined;
      const validBody = base === undefined ? undefined : JSON.stringify(base);

      for (const kind of KINDS) {
        // Path parameters: one at a time, the others plausible.
        if (operation.pathParams.length > 0) {
          const target = operation.pathParams[Math.floor(random() * operation.pathParams.length)];
          const url = `${server.url}${pathWith(target, kind)}`;
          exchanges.push(
            await send(`${label} path ${target}`, kind, url, {
              method: operation.method,
              headers: validBody ? jsonHeaders : headers,
              ...(validBody ? { body: validBody } : {}),
            }),
          );
        }
        // Query: a declared parameter when there is one (shape kinds need one), else an undeclared one (bytes only).
        const declared = operation.queryParams[Math.floor(random() * operation.queryParams.length)];
        if (declared || isByteKind(kind)) {
          const name = declared ?? 'fuzz';
          const query = kind === 'wrongType' ? `${name}=1&${name}=2` : `${name}=${urlValue(kind)}`;
          exchanges.push(
            await send(`${label} query ${name}`, kind, `${server.url}${pathWith()}?${query}`, {
              method: operation.method,
              headers: validBody ? jsonHeaders : headers,
              ...(validBody ? { body: validBody } : {}),
            }),
          );
        }
        // JSON body: one leaf replaced, or the whole body an array.
        if (base !== undefined) {
          const paths = leaves(base);
          const path = paths[Math.floor(random() * paths.length)] ?? [];
          const body = kind === 'arrayForObject' ? [base] : replaced(base, path, jsonValue(kind));
          exchanges.push(
            await send(`${label} body ${path.join('.') || '(root)'}`, kind, `${server.url}${pathWith()}`, {
              method: operation.method,
              headers: jsonHeaders,
              body: jsonBytes(body),
            }),
          );
        }
        if (operation.formBody) {
          const fields = Object.fromEntries(
            Object.entries(sample(operation.formBody, document) as Record<string, unknown>).map(([k, v]) => [k, String(v)]),
          );
          const names = Object.keys(fields);
          const target = names[Math.floor(random() * names.length)] ?? 'fuzz';
          exchanges.push(
            await send(`${label} form ${target}`, kind, `${server.url}${pathWith()}`, {
              method: operation.method,
              headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
              body: formBody({ ...fields, [target]: '' }, target, kind),
            }),
          );
        }
      }
      // Shape kinds may be valid for some fields (a long name, a path-like string): only bytes must be refused.
      check(exchanges, operation.scim ? isScimError : operation.pages ? isPage : isProblem);
      if (exchanges.every((exchange) => exchange.status >= 400)) expect(await counts(), label).toEqual(before);
    }
  });

  it('answers the provider endpoints with OAuth errors', async () => {
    const before = await counts();
    const exchanges: Exchange[] = [];
    const authorize = {
      client_id: client.clientId,
      response_type: 'code',
      redirect_uri: redirectUri,
      scope: 'openid',
      state: 'fuzz-state',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGAmkB2nOQ',
      code_challenge_method: 'S256',
    };
    const token = {
      grant_type: 'authorization_code',
      code: 'fuzz-code',
      redirect_uri: redirectUri,
      client_id: client.clientId,
      client_secret: client.clientSecret,
    };
    const tokenRequest = { token: 'fuzz-token', client_id: client.clientId, client_secret: client.clientSecret };
    const endSession = { client_id: client.clientId, id_token_hint: 'fuzz', state: 'fuzz-state' };
    const logoutConfirm = { xsrf: 'fuzz', logout: 'yes' };
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    for (const kind of KINDS) {
      for (const name of Object.keys(authorize)) {
        exchanges.push(
          await send(
            `GET /connect/authorize ${name}`,
            kind,
            `${server.url}/connect/authorize?${formBody(authorize, name, kind)}`,
          ),
          await send(`POST /connect/authorize ${name}`, kind, `${server.url}/connect/authorize`, {
            method: 'POST',
            headers: form,
            body: formBody(authorize, name, kind),
          }),
        );
      }
      for (const name of Object.keys(token)) {
        exchanges.push(
          await send(`POST /connect/token ${name}`, kind, `${server.url}/connect/token`, {
            method: 'POST',
            headers: form,
            body: formBody(token, name, kind),
          }),
        );
      }
      for (const endpoint of ['/connect/revoke', '/connect/introspect']) {
        for (const name of Object.keys(tokenRequest)) {
          exchanges.push(
            await send(`POST ${endpoint} ${name}`, kind, `${server.url}${endpoint}`, {
              method: 'POST',
              headers: form,
              body: formBody(tokenRequest, name, kind),
            }),
          );
        }
      }
      for (const name of Object.keys(endSession)) {
        exchanges.push(
          await send(`GET /connect/logout ${name}`, kind, `${server.url}/connect/logout?${formBody(endSession, name, kind)}`),
          await send(`POST /connect/logout ${name}`, kind, `${server.url}/connect/logout`, {
            method: 'POST',
            headers: form,
            body: formBody(endSession, name, kind),
          }),
        );
      }
      for (const name of Object.keys(logoutConfirm)) {
        exchanges.push(
          await send(`POST /connect/logout/confirm ${name}`, kind, `${server.url}/connect/logout/confirm`, {
            method: 'POST',
            headers: form,
            body: formBody(logoutConfirm, name, kind),
          }),
        );
      }
      if (isByteKind(kind)) {
        // Client credentials in HTTP Basic are form-encoded before Base64 (RFC 6749 2.3.1).
        const basic = Buffer.from(`${urlValue(kind)}:${client.clientSecret}`).toString('base64');
        exchanges.push(
          await send('POST /connect/token Basic client id', kind, `${server.url}/connect/token`, {
            method: 'POST',
            headers: { ...form, authorization: `Basic ${basic}` },
            body: 'grant_type=client_credentials',
          }),
          await send('POST /connect/token raw bytes', kind, `${server.url}/connect/token`, {
            method: 'POST',
            headers: form,
            body: Buffer.concat([Buffer.from('grant_type=client_credentials&client_id='), Buffer.from([0xff, 0xc0, 0xaf])]),
          }),
        );
      }
    }
    // Shape kinds are ordinary bad requests to the provider (errors, or a redirect back with an error).
    check(exchanges, isOAuthError);
    expect(await counts()).toEqual(before);
  });

  it('answers the sign-in forms with pages', async () => {
    const browser = new Browser();
    const query = new URLSearchParams({
      client_id: client.clientId,
      response_type: 'code',
      redirect_uri: redirectUri,
      scope: 'openid',
      state: 'fuzz-state',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGAmkB2nOQ',
      code_challenge_method: 'S256',
    });
    const page = await browser.navigate(`${server.url}/connect/authorize?${query}`);
    expect(page.status).toBe(200);
    const forms = parseForms(page.body, page.url).filter((form) => form.method === 'POST');
    expect(forms.length).toBeGreaterThan(0);
    const before = await counts();
    const exchanges: Exchange[] = [];
    const record = async (label: string, kind: Kind, url: string, init: RequestInit = {}) => {
      const response = await browser.request(url, init);
      exchanges.push({
        label,
        kind,
        status: response.status,
        contentType: response.headers.get('content-type') ?? '',
        body: response.body,
      });
    };
    for (const kind of BYTE_KINDS) {
      await record('GET sign-in page query', kind, `${page.url}?fuzz=${urlValue(kind)}`);
      for (const form of forms) {
        for (const name of Object.keys(form.fields).concat('email')) {
          await record(`POST ${new URL(form.action).pathname} ${name}`, kind, form.action, {
            method: 'POST',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            body: formBody({ ...form.fields, email: 'fuzz@example.com' }, name, kind),
          });
        }
        await record(`POST ${new URL(form.action).pathname} raw bytes`, kind, form.action, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: Buffer.concat([Buffer.from('email='), Buffer.from([0xff, 0xfe])]),
        });
      }
    }
    check(exchanges, isHtml);
    expect(await counts()).toEqual(before);
  });
});
