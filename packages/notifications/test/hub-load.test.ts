import { newId } from '@idt/core';
import { bearer, bootstrapAdmin, mintAccessToken, startTestServer, type TestAdmin, type TestServer } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRaw, type RawHubClient } from './hub-support.js';

const USERS = 1_000;

/** Runs `task` over `items` with at most `limit` at a time. */
async function pool<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await task(items[index] as T);
      }
    }),
  );
  return results;
}

/**
 * A bounded load test of the hub on one instance (SQLite): a thousand users
 * connected at once, each sent one notification through the API.
 */
describe('realtime hub under load', () => {
  let server: TestServer;
  let admin: TestAdmin;
  const clients: RawHubClient[] = [];

  beforeAll(async () => {
    server = await startTestServer();
    admin = await bootstrapAdmin(server);
  });
  afterAll(async () => {
    for (const client of clients) client.ws.terminate();
    await server?.close();
  });

  it(`holds ${USERS} connections and delivers one notification to each user within 2 s`, { timeout: 120_000 }, async () => {
    const { db } = server.database;
    const now = new Date().toISOString();
    const userIds = Array.from({ length: USERS }, () => newId());
    for (let offset = 0; offset < USERS; offset += 200) {
      const batch = userIds.slice(offset, offset + 200);
      await db('identity_users').insert(
        batch.map((id, index) => ({
          id,
          email: `load-${offset + index}@example.com`,
          username: `load-${offset + index}@example.com`,
          first_name: 'Load',
          last_name: String(offset + index),
          status: 'active',
          email_verified: false,
          created_at: now,
          updated_at: now,
        })),
      );
      const memberships = batch.map((userId) => ({
        id: newId(),
        user_id: userId,
        organization_id: admin.organizationId,
        status: 'active',
        created_at: now,
        updated_at: now,
      }));
      await db('identity_memberships').insert(memberships);
      await db('identity_membership_roles').insert(memberships.map(({ id }) => ({ membership_id: id, role: 'user' })));
    }
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    const connectStarted = performance.now();
    clients.push(
      ...(await pool(userIds, 25, async (userId) =>
        connectRaw(server, await mintAccessToken(server, { sub: userId, org_id: admin.organizationId })),
      )),
    );
    const connectMs = performance.now() - connectStarted;
    expect(server.idt.services.notifications.hub.connectionCount()).toBeGreaterThanOrEqual(USERS);
    const rssConnected = process.memoryUsage().rss;

    const token = await admin.token();
    const created = new Map<string, number>();
    const received = clients.map((client) =>
      client.next((message) => message.type === 1, 60_000).then((message) => ({ message, at: performance.now() })),
    );
    const sendStarted = performance.now();
    await pool(userIds, 10, async (userId) => {
      created.set(userId, performance.now());
      const response = await server.fetch('/v1/notifications', {
        method: 'POST',
        headers: bearer(token),
        body: JSON.stringify({ userId, type: 'SystemNotification', title: `For ${userId}`, message: 'Load test' }),
      });
      expect(response.status).toBe(201);
    });
    const deliveries = await Promise.all(received);
    const allDeliveredMs = Math.max(...deliveries.map(({ at }) => at)) - sendStarted;
    const latencies = deliveries.map(({ message, at }, index) => {
      const payload = (message.arguments as Array<{ payload: { title: string } }>)[0]?.payload;
      expect(payload?.title).toBe(`For ${userIds[index]}`);
      return at - (created.get(userIds[index] as string) ?? at);
    });
    const worst = Math.max(...latencies);
    console.log(
      `hub load: ${USERS} connections in ${Math.round(connectMs)} ms; RSS ${Math.round(rssBefore / 2 ** 20)} MiB before, ` +
        `${Math.round(rssConnected / 2 ** 20)} MiB connected (server and clients in one process); ` +
        `${USERS} notifications sent and delivered in ${Math.round(allDeliveredMs)} ms; worst request→delivery ${Math.round(worst)} ms`,
    );
    expect(worst).toBeLessThan(2000);
  });
});
