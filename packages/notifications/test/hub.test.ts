import {
  bearer,
  bootstrapAdmin,
  discover,
  mintAccessToken,
  oidcClient,
  redeemCode,
  registerClient,
  seedMembership,
  seedUser,
  signIn,
  startTestServer,
  type TestAdmin,
  type TestServer,
  testDialects,
} from '@idt/testing';
import * as signalR from '@microsoft/signalr';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RealtimeEnvelope } from '../src/index.js';
import { stockClient } from './hub-support.js';

const REDIRECT = 'http://127.0.0.1:9/callback';

/** Resolves with the first `ReceiveNotification` envelope matching `match`. */
function nextEnvelope(connection: signalR.HubConnection, match: (envelope: RealtimeEnvelope) => boolean, timeoutMs = 5000) {
  return new Promise<RealtimeEnvelope>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no ReceiveNotification arrived')), timeoutMs);
    const handler = (envelope: RealtimeEnvelope) => {
      if (!match(envelope)) return;
      clearTimeout(timer);
      connection.off('ReceiveNotification', handler);
      resolve(envelope);
    };
    connection.on('ReceiveNotification', handler);
  });
}

/** Watches a connection's lifecycle: every reconnect attempt and the final close. */
function watch(connection: signalR.HubConnection) {
  const seen = { reconnecting: 0, closed: undefined as Error | undefined | null };
  const closed = new Promise<Error | undefined>((resolve) =>
    connection.onclose((error) => {
      seen.closed = error ?? null;
      resolve(error);
    }),
  );
  connection.onreconnecting(() => {
    seen.reconnecting++;
  });
  return { seen, closed };
}

async function postNotification(server: TestServer, token: string, body: Record<string, unknown>) {
  const response = await server.fetch('/v1/notifications', {
    method: 'POST',
    headers: bearer(token),
    body: JSON.stringify(body),
  });
  expect(response.status, await response.clone().text()).toBe(201);
  return ((await response.json()) as { id: string }).id;
}

describe.each(testDialects())('realtime hub with the stock SignalR client on %s', (dialect) => {
  let server: TestServer;
  let admin: TestAdmin;
  const open: signalR.HubConnection[] = [];

  beforeAll(async () => {
    server = await startTestServer({ dialect });
    admin = await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await Promise.all(open.map((connection) => connection.stop().catch(() => undefined)));
    await server?.close();
  });

  async function connect(target: TestServer, token: () => string) {
    const connection = stockClient(target, token);
    open.push(connection);
    await connection.start();
    return connection;
  }

  it('receives ReceiveNotification for a notification created through the API within a second', async () => {
    const token = await admin.token();
    const connection = await connect(server, () => token);
    expect(connection.state).toBe(signalR.HubConnectionState.Connected);
    const arriving = nextEnvelope(connection, (envelope) => envelope.type === 'NotificationCreated');
    const started = performance.now();
    const id = await postNotification(server, token, {
      userId: admin.userId,
      type: 'SystemNotification',
      title: 'Maintenance tonight',
      message: 'The service restarts at 22:00 UTC.',
      actionUrl: '/status',
    });
    const envelope = await arriving;
    expect(performance.now() - started).toBeLessThan(1000);
    expect(envelope).toMatchObject({
      type: 'NotificationCreated',
      module: 'Notifications',
      payload: {
        id,
        title: 'Maintenance tonight',
        message: 'The service restarts at 22:00 UTC.',
        type: 'SystemNotification',
        actionUrl: '/status',
      },
    });
    expect(Date.parse(envelope.timestamp)).not.toBeNaN();
    expect(Date.parse(String(envelope.payload.createdAt))).not.toBeNaN();
    await connection.stop();
  });

  it("never delivers a notification to another user's connections", async () => {
    const other = await seedUser(server.database.db);
    await seedMembership(server.database.db, { userId: other.id, organizationId: admin.organizationId, roles: ['user'] });
    const otherToken = await mintAccessToken(server, { sub: other.id, org_id: admin.organizationId });
    const otherConnection = await connect(server, () => otherToken);
    const leaked: RealtimeEnvelope[] = [];
    otherConnection.on('ReceiveNotification', (envelope: RealtimeEnvelope) => leaked.push(envelope));
    const adminToken = await admin.token();
    const adminConnection = await connect(server, () => adminToken);
    const arriving = nextEnvelope(adminConnection, (envelope) => envelope.payload.title === 'Only for the admin');
    await postNotification(server, adminToken, {
      userId: admin.userId,
      type: 'SystemNotification',
      title: 'Only for the admin',
      message: 'x',
    });
    await arriving;
    expect(leaked).toEqual([]);
    await otherConnection.stop();
    await adminConnection.stop();
  });

  it('sends SessionEnded on logout at /connect/logout, then closes without a reconnect attempt', async () => {
    const client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: `Hub logout ${dialect}`,
      redirectUris: [REDIRECT],
      scopes: ['openid', 'notifications.read'],
    });
    const config = await discover(server, client);
    const result = await signIn(config, { redirectUri: REDIRECT, scope: 'openid', email: admin.email, password: admin.password });
    const tokens = await redeemCode(config, result);
    const sid = tokens.claims()?.sid as string;
    expect(sid).toBeTruthy();
    const connection = await connect(server, () => tokens.access_token);
    const lifecycle = watch(connection);
    const ended = nextEnvelope(connection, (envelope) => envelope.type === 'SessionEnded');
    // Logout ends the identity session and the provider's: two events, one broadcast to the instances.
    const broadcasts = new Set<string>(); // message ids (a broadcast may be heard twice; the hub takes it once)
    const unsubscribe = server.idt.infrastructure.invalidator.subscribe('notifications.realtime', (key) => {
      const message = JSON.parse(key) as { m: string; op: string; s?: string };
      if (message.op === 'end' && message.s === sid) broadcasts.add(message.m);
    });

    const confirm = await result.browser.navigate(
      oidcClient.buildEndSessionUrl(config, { id_token_hint: tokens.id_token ?? '' }).href,
    );
    expect(confirm.status).toBe(200);
    await result.browser.submit({ form: 'logout', fields: { logout: 'yes' } });

    const envelope = await ended;
    expect(envelope).toMatchObject({ type: 'SessionEnded', module: 'Identity', payload: { sid } });
    const error = await lifecycle.closed;
    expect(error?.message).toMatch(/Session ended/);
    await new Promise((resolve) => setTimeout(resolve, 300)); // real time for a retry the client must not make
    expect(lifecycle.seen.reconnecting).toBe(0);
    expect(connection.state).toBe(signalR.HubConnectionState.Disconnected);
    const handlers = ['notifications.realtime-end-revoked-session', 'notifications.realtime-end-oidc-session'];
    await vi.waitFor(
      async () => {
        await server.idt.infrastructure.events.dispatchPending();
        const rows = await server.database.db('core_outbox_deliveries').whereIn('handler', handlers).where({ status: 'pending' });
        expect(rows).toEqual([]);
      },
      { timeout: 5000, interval: 20 },
    );
    const delivered = await server.database
      .db('core_outbox_deliveries as d')
      .join('core_outbox_events as e', 'e.id', 'd.event_id')
      .whereIn('d.handler', handlers)
      .where('e.payload', 'like', `%${sid}%`)
      .select('d.handler', 'd.status');
    expect(delivered.map((row) => row.handler).sort()).toEqual([...handlers].sort());
    expect(delivered.every((row) => row.status === 'delivered')).toBe(true);
    expect(broadcasts.size).toBe(1);
    unsubscribe();
  });

  it('closes the connections of a deactivated user at once, without reconnect', async () => {
    const user = await seedUser(server.database.db);
    await seedMembership(server.database.db, { userId: user.id, organizationId: admin.organizationId, roles: ['user'] });
    const token = await mintAccessToken(server, { sub: user.id, org_id: admin.organizationId });
    const connection = await connect(server, () => token);
    const lifecycle = watch(connection);
    const response = await server.fetch(`/v1/identity/users/${user.id}/deactivate`, {
      method: 'POST',
      headers: bearer(await admin.token()),
    });
    expect(response.status).toBeLessThan(300);
    const error = await lifecycle.closed;
    expect(error?.message).toMatch(/deactivated/);
    expect(lifecycle.seen.reconnecting).toBe(0);
  });

  it('closes the connections a removed member opened for that organization', async () => {
    const user = await seedUser(server.database.db);
    await seedMembership(server.database.db, { userId: user.id, organizationId: admin.organizationId, roles: ['user'] });
    const token = await mintAccessToken(server, { sub: user.id, org_id: admin.organizationId });
    const connection = await connect(server, () => token);
    const lifecycle = watch(connection);
    const response = await server.fetch(`/v1/identity/organizations/${admin.organizationId}/members/${user.id}`, {
      method: 'DELETE',
      headers: bearer(await admin.token()),
    });
    expect(response.status).toBe(204);
    const error = await lifecycle.closed;
    expect(error?.message).toMatch(/membership/);
    expect(lifecycle.seen.reconnecting).toBe(0);
  });

  if (dialect === 'postgres') {
    it('delivers a notification created on one instance to a client connected to another', async () => {
      // A second instance behind the same public address: same database, same issuer.
      const second = await startTestServer({ dialect, database: server.database, config: { issuer: server.origin } });
      try {
        const token = await admin.token();
        const connection = await connect(second, () => token);
        const arriving = nextEnvelope(connection, (envelope) => envelope.payload.title === 'From instance A');
        const started = performance.now();
        await postNotification(server, token, {
          userId: admin.userId,
          type: 'Announcement',
          title: 'From instance A',
          message: 'Hello B',
        });
        await arriving;
        expect(performance.now() - started).toBeLessThan(1000);
        await connection.stop();
      } finally {
        await second.close();
      }
    });
  }
});
