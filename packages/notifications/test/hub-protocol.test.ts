import { createManualClock, type ManualClock } from '@idt/core';
import { bootstrapAdmin, mintAccessToken, startTestServer, type TestAdmin, type TestServer } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRaw, hubSocketUrl, negotiate, upgradeStatus } from './hub-support.js';

/**
 * The wire protocol of the realtime hub, driven by hand over real WebSockets:
 * negotiate, connection tokens, handshake, invocations and completions, the
 * message limit, and every time rule (ping, client timeout, handshake timeout,
 * token expiry) on a manual clock.
 */
describe('realtime hub protocol', () => {
  let server: TestServer;
  let admin: TestAdmin;
  let clock: ManualClock;
  const hub = () => server.idt.services.notifications.hub;

  beforeAll(async () => {
    clock = createManualClock('2026-03-01T09:00:00Z');
    server = await startTestServer({ clock });
    admin = await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('negotiates version 1 with a secret connection token and only the WebSockets transport', async () => {
    const response = await server.fetch('/hubs/realtime/negotiate?negotiateVersion=1', {
      method: 'POST',
      headers: { authorization: `Bearer ${await admin.token()}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      negotiateVersion: 1,
      availableTransports: [{ transport: 'WebSockets', transferFormats: ['Text'] }],
    });
    expect(body.connectionToken).toMatch(/^[A-Za-z0-9_-]{22}\.[0-9a-z]+\.[A-Za-z0-9_-]{43}$/);
    expect(String(body.connectionToken).startsWith(`${body.connectionId}.`)).toBe(true);
  });

  it('negotiates version 0, where the connection id is the token', async () => {
    const response = await server.fetch('/hubs/realtime/negotiate', {
      method: 'POST',
      headers: { authorization: `Bearer ${await admin.token()}` },
    });
    const body = (await response.json()) as { connectionId: string; negotiateVersion: number; connectionToken?: string };
    expect(body.negotiateVersion).toBe(0);
    expect(body.connectionToken).toBeUndefined();
    const client = await connectRaw(server, await admin.token(), { id: body.connectionId });
    client.ws.close();
  });

  it('refuses negotiate without a token, with a bad one and with an expired one (401 problem)', async () => {
    const expired = await mintAccessToken(server, { sub: admin.userId, org_id: admin.organizationId }, { expiresIn: -600 });
    for (const headers of [
      {} as Record<string, string>,
      { authorization: 'Bearer not-a-token' },
      { authorization: `Bearer ${expired}` },
      { authorization: 'Basic eDp5' },
    ]) {
      const response = await server.fetch('/hubs/realtime/negotiate?negotiateVersion=1', { method: 'POST', headers });
      expect(response.status).toBe(401);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
      expect(await response.json()).toMatchObject({ code: 'Auth.Unauthenticated' });
    }
    const viaQuery = await server.fetch(`/hubs/realtime/negotiate?negotiateVersion=1&access_token=${await admin.token()}`, {
      method: 'POST',
    });
    expect(viaQuery.status).toBe(200);
  });

  it('refuses an upgrade without a token, with an expired token, a forged or reused connection token, or no WebSocket', async () => {
    const token = await admin.token();
    expect((await upgradeStatus(hubSocketUrl(server))).status).toBe(401);
    // Expired a second ago: within the API's clock tolerance, but a connection would end at once.
    const expired = await mintAccessToken(server, { sub: admin.userId, org_id: admin.organizationId }, { expiresIn: -1 });
    const refused = await upgradeStatus(hubSocketUrl(server, { id: await negotiate(server, token) }), {
      authorization: `Bearer ${expired}`,
    });
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'Auth.Unauthenticated' });

    const id = await negotiate(server, token);
    const forged = `${id.slice(0, -3)}AAA`;
    const notFound = await upgradeStatus(hubSocketUrl(server, { id: forged }), { authorization: `Bearer ${token}` });
    expect(notFound.status).toBe(404);
    expect(JSON.parse(notFound.body)).toMatchObject({ code: 'Realtime.ConnectionNotFound' });

    const first = await connectRaw(server, token, { id });
    const reused = await upgradeStatus(hubSocketUrl(server, { id }), { authorization: `Bearer ${token}` });
    expect(reused.status).toBe(409);
    expect(JSON.parse(reused.body)).toMatchObject({ code: 'Realtime.ConnectionInUse' });
    first.ws.close();

    // Another caller's connection token is unknown to this one.
    const other = await mintAccessToken(server, { sub: '0198f000-0000-7000-8000-000000000001' });
    const foreign = await upgradeStatus(hubSocketUrl(server, { id: await negotiate(server, token) }), {
      authorization: `Bearer ${other}`,
    });
    expect([401, 404]).toContain(foreign.status);

    // A token older than 15 seconds is refused.
    const stale = await negotiate(server, token);
    clock.advance(15_001);
    expect(
      (await upgradeStatus(hubSocketUrl(server, { id: stale }), { authorization: `Bearer ${await admin.token()}` })).status,
    ).toBe(404);

    const plain = await fetch(hubSocketUrl(server).replace(/^ws/, 'http'), { headers: { authorization: `Bearer ${token}` } });
    expect(plain.status).toBe(404);
    // Upgrades of paths no module takes are refused by the server.
    expect((await upgradeStatus(hubSocketUrl(server).replace('/hubs/realtime', '/hubs/other'))).status).toBe(404);
  });

  it('accepts the token as the access_token query (browsers) and without negotiation (skipNegotiation)', async () => {
    const viaQuery = await connectRaw(server, await admin.token(), { via: 'query' });
    const direct = await connectRaw(server, await admin.token(), { id: null });
    viaQuery.ws.close();
    direct.ws.close();
  });

  it('answers the handshake, then completions for JoinGroup and LeaveGroup of its own groups only', async () => {
    const client = await connectRaw(server, await admin.token());
    client.send(
      { type: 1, invocationId: '1', target: 'JoinGroup', arguments: [`tenant:${admin.organizationId}`] },
      { type: 1, invocationId: '2', target: 'JoinGroup', arguments: ['tenant:0198f000-0000-7000-8000-00000000beef'] },
      { type: 1, invocationId: '3', target: 'JoinGroup', arguments: ['user:someone-else'] },
      { type: 1, invocationId: '4', target: 'LeaveGroup', arguments: [`user:${admin.userId}`] },
      { type: 1, invocationId: '5', target: 'Shutdown', arguments: [] },
      { type: 1, invocationId: '6', target: 'JoinGroup', arguments: [] },
      { type: 1, target: 'JoinGroup', arguments: ['user:nobody'] },
      { type: 4, invocationId: '7', target: 'Stream', arguments: [] },
      { type: 6 },
    );
    const result = async (id: string) => client.next((message) => message.type === 3 && message.invocationId === id);
    expect(await result('1')).toEqual({ type: 3, invocationId: '1' });
    expect((await result('2')).error).toMatch(/Access denied/);
    expect((await result('3')).error).toMatch(/Access denied/);
    expect(await result('4')).toEqual({ type: 3, invocationId: '4' });
    expect((await result('5')).error).toBe("Unknown hub method 'Shutdown'.");
    expect((await result('6')).error).toMatch(/one argument/);
    expect((await result('7')).error).toMatch(/not supported/);
    // The non-blocking invocation got no completion.
    expect(client.messages.filter((message) => message.type === 3)).toHaveLength(7);

    // Left its user group: a message to the user no longer reaches it; rejoined, it does.
    const envelope = { type: 'Test', module: 'Tests', payload: {}, timestamp: clock.now().toISOString() };
    await hub().sendToUser(admin.userId, envelope);
    client.send({ type: 1, invocationId: '8', target: 'JoinGroup', arguments: [`user:${admin.userId}`] });
    await result('8');
    await hub().sendToUser(admin.userId, { ...envelope, type: 'Second' });
    const received = await client.next((message) => message.type === 1);
    expect(received).toEqual({ type: 1, target: 'ReceiveNotification', arguments: [{ ...envelope, type: 'Second' }] });
    client.ws.close();
  });

  it('refuses an unknown protocol at the handshake', async () => {
    const client = await connectRaw(server, await admin.token(), { handshake: false });
    client.send({ protocol: 'messagepack', version: 1 });
    const reply = await client.next(() => true);
    expect(reply.error).toMatch(/messagepack/);
    expect((await client.closed).code).toBe(1002);
  });

  it('closes a connection that sends a 40 KiB message, with an error', async () => {
    const client = await connectRaw(server, await admin.token());
    client.send({ type: 1, target: 'JoinGroup', arguments: ['x'.repeat(40 * 1024)] });
    const close = await client.next((message) => message.type === 7);
    expect(close.error).toMatch(/maximum size of 32768 bytes/);
    expect(close.allowReconnect).toBeUndefined();
    expect((await client.closed).code).toBe(1009);
  });

  it('closes a connection on a malformed message', async () => {
    const client = await connectRaw(server, await admin.token());
    client.ws.send('{"type":1,\u001e');
    const close = await client.next((message) => message.type === 7);
    expect(close.error).toMatch(/Protocol error/);
    await client.closed;
  });

  it('pings after 15 s of silence and drops a client silent for 30 s, on the manual clock', async () => {
    const client = await connectRaw(server, await admin.token());
    const pings = () => client.messages.filter((message) => message.type === 6).length;
    clock.advance(14_000);
    hub().tick();
    expect(pings()).toBe(0);
    clock.advance(1_000);
    hub().tick();
    await client.next((message) => message.type === 6);
    expect(pings()).toBe(1);
    client.send({ type: 6 });
    await new Promise((resolve) => setTimeout(resolve, 50)); // real I/O: the ping reaches the server
    clock.advance(29_000);
    hub().tick();
    expect(client.messages.some((message) => message.type === 7)).toBe(false);
    clock.advance(1_000);
    hub().tick();
    const close = await client.next((message) => message.type === 7);
    expect(close.error).toMatch(/Client timeout/);
    await client.closed;
  });

  it('closes a connection that does not complete the handshake within 15 s', async () => {
    const client = await connectRaw(server, await admin.token(), { handshake: false });
    clock.advance(14_999);
    hub().tick();
    expect(client.ws.readyState).toBe(client.ws.OPEN);
    clock.advance(1);
    hub().tick();
    expect((await client.closed).code).toBe(1002);
  });

  it('closes with allowReconnect when the access token expires', async () => {
    const token = await mintAccessToken(server, { sub: admin.userId, org_id: admin.organizationId }, { expiresIn: 60 });
    const client = await connectRaw(server, token);
    // The client keeps talking (a completion proves the server heard it), so only the expiry can close it.
    let invocation = 0;
    const talk = async () => {
      const invocationId = `t${++invocation}`;
      client.send({ type: 1, invocationId, target: 'JoinGroup', arguments: [`user:${admin.userId}`] });
      await client.next((message) => message.type === 3 && message.invocationId === invocationId);
    };
    for (let step = 0; step < 3; step++) {
      await talk();
      clock.advance(19_000);
      hub().tick();
    }
    await talk();
    clock.advance(2_999);
    hub().tick();
    expect(client.messages.some((message) => message.type === 7)).toBe(false);
    clock.advance(1);
    hub().tick();
    const close = await client.next((message) => message.type === 7);
    expect(close).toEqual({ type: 7, error: 'The access token expired; reconnect with a fresh one.', allowReconnect: true });
    expect((await client.closed).code).toBe(1000);
  });
});
