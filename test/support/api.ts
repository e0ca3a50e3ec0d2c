import type { Knex } from 'knex';
import { expect } from 'vitest';
import { seedMembership, seedOrganization, seedUser } from './identity.js';
import type { TestHost } from './test-idt.js';
import { mintAccessToken, tenantWithTokens } from './tokens.js';

/** Options of one API call. */
export interface CallOptions {
  readonly token?: string;
  /** A JSON value, or a string sent as it is (to test malformed bodies). */
  readonly body?: unknown;
}

/** Calls the API of a test server as JSON. */
export function caller(server: TestHost) {
  return (method: string, path: string, options: CallOptions = {}) =>
    server.fetch(path, {
      method,
      headers: {
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
        ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(options.body !== undefined
        ? { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) }
        : {}),
    });
}

/** Asserts a problem document and returns it. */
export async function expectProblem(response: Response, status: number, code: string): Promise<Record<string, any>> {
  const body = (await response.json()) as Record<string, any>;
  expect({ status: response.status, code: body.code }).toEqual({ status, code });
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  return body;
}

/** Asserts a JSON success response and returns its body (`undefined` when empty). */
export async function expectJson(response: Response, status = 200): Promise<any> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  return text === '' ? undefined : JSON.parse(text);
}

/**
 * Two tenants (A and B, each with an owner, admin, manager and user), the
 * platform organization with its owner, and an outsider with no membership.
 * Seeding an owner also ends setup mode.
 */
export async function seedWorld(server: TestHost) {
  const db = server.database.db;
  const platform = await seedOrganization(db, { name: 'Platform', isPlatform: true });
  const platformAdmin = await seedUser(db, { firstName: 'Pat', lastName: 'Platform' });
  await seedMembership(db, { userId: platformAdmin.id, organizationId: platform.id, roles: ['owner'] });
  const a = await tenantWithTokens(server, 'Alpha');
  const b = await tenantWithTokens(server, 'Beta');
  const outsider = await seedUser(db, { firstName: 'Otto', lastName: 'Outsider' });
  return {
    platform,
    platformAdmin,
    platformToken: await mintAccessToken(server, { sub: platformAdmin.id, org_id: platform.id }),
    a,
    b,
    outsider,
    outsiderToken: await mintAccessToken(server, { sub: outsider.id }),
  };
}

/** The world of {@link seedWorld}. */
export type World = Awaited<ReturnType<typeof seedWorld>>;

/** The payloads of the outbox events of one type, oldest first. */
export async function outboxEvents(db: Knex, type: string): Promise<Array<Record<string, unknown>>> {
  const rows: Array<{ payload: string | Record<string, unknown> }> = await db('core_outbox_events')
    .where({ type })
    .orderBy('id')
    .select('payload');
  return rows.map((row) => (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload) as Record<string, unknown>);
}
