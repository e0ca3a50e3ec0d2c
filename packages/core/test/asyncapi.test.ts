import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createAsyncApiRoutes,
  createHealthRoutes,
  createHttpApp,
  defineEvent,
  type EventCatalog,
  generateOpenApiDocument,
} from '../src/index.js';

const UserSessionEvicted = defineEvent({
  type: 'UserSessionEvictedEvent',
  module: 'identity',
  description: 'A login pushed the user past the concurrent session limit; the oldest session was revoked.',
  schema: z.object({ userId: z.string(), sessionId: z.string() }),
});
const EmailChangeRequested = defineEvent({
  type: 'EmailChangeRequestedEvent',
  module: 'identity',
  description: 'A user asked to change their <email> & must confirm "it".',
  schema: z.object({ userId: z.string(), newEmail: z.email(), requestedAt: z.iso.datetime() }),
});

const catalog: EventCatalog = {
  events: [UserSessionEvicted, EmailChangeRequested],
  handlers: [
    {
      name: 'oidc.revoke-evicted-session',
      module: 'oidc',
      event: 'UserSessionEvictedEvent',
      description: 'Ends the OIDC session.',
    },
    { name: 'audit.record-eviction', module: 'audit', event: 'UserSessionEvictedEvent' },
    { name: 'notifications.mail-email-change', module: 'notifications', event: 'EmailChangeRequestedEvent' },
  ],
};

function app(pathPrefix = '') {
  const routes = [
    ...createHealthRoutes([]),
    ...createAsyncApiRoutes({ catalog: () => catalog, serverUrl: `http://api.test${pathPrefix}`, pathPrefix }),
  ];
  return {
    routes,
    app: createHttpApp({ environment: 'Development', publicBaseUrl: `http://api.test${pathPrefix}`, pathPrefix, routes }),
  };
}

describe('AsyncAPI event catalog routes', () => {
  it('serves an AsyncAPI 3.0 document with a channel per event and operations for publishers and handlers', async () => {
    const response = await app().app.fetch(new Request('http://api.test/asyncapi/v1.json'));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const document = (await response.json()) as Record<string, any>;
    expect(document.asyncapi).toBe('3.0.0');
    expect(document.info).toMatchObject({ title: 'idt events', version: '1' });
    expect(Object.keys(document.channels).sort()).toEqual(['EmailChangeRequestedEvent', 'UserSessionEvictedEvent']);
    expect(document.channels.UserSessionEvictedEvent).toMatchObject({
      address: 'UserSessionEvictedEvent',
      messages: { UserSessionEvictedEvent: { $ref: '#/components/messages/UserSessionEvictedEvent' } },
    });
    expect(document.components.messages.UserSessionEvictedEvent.payload).toEqual({
      type: 'object',
      properties: { userId: { type: 'string' }, sessionId: { type: 'string' } },
      required: ['userId', 'sessionId'],
      additionalProperties: false,
    });
    expect(document.components.messages.EmailChangeRequestedEvent.payload.properties.newEmail).toMatchObject({
      type: 'string',
      format: 'email',
    });

    const operations = document.operations as Record<string, Record<string, any>>;
    const sends = Object.entries(operations).filter(([, operation]) => operation.action === 'send');
    const receives = Object.entries(operations).filter(([, operation]) => operation.action === 'receive');
    expect(sends.map(([key]) => key).sort()).toEqual([
      'identity.send.EmailChangeRequestedEvent',
      'identity.send.UserSessionEvictedEvent',
    ]);
    expect(receives.map(([key]) => key).sort()).toEqual([
      'audit.record-eviction',
      'notifications.mail-email-change',
      'oidc.revoke-evicted-session',
    ]);
    expect(operations['oidc.revoke-evicted-session']).toMatchObject({
      action: 'receive',
      channel: { $ref: '#/channels/UserSessionEvictedEvent' },
      messages: [{ $ref: '#/channels/UserSessionEvictedEvent/messages/UserSessionEvictedEvent' }],
      description: 'Ends the OIDC session.',
      'x-idt-module': 'oidc',
    });

    // Every local reference resolves.
    const refs = JSON.stringify(document).match(/"\$ref":"[^"]+"/g) ?? [];
    for (const ref of refs) {
      const pointer = ref.slice('"$ref":"#/'.length, -1).split('/');
      let node: unknown = document;
      for (const part of pointer) node = (node as Record<string, unknown> | undefined)?.[part];
      expect(node, ref).toBeDefined();
    }
  });

  it('serves the flows as a Mermaid flowchart in plain text', async () => {
    const response = await app().app.fetch(new Request('http://api.test/asyncapi/v1/flows'));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const body = await response.text();
    expect(body.startsWith('flowchart LR\n')).toBe(true);
    expect(body).toContain('P0["identity"]');
    expect(body).toContain('{{"UserSessionEvictedEvent"}}');
    expect(body).toContain('["oidc / oidc.revoke-evicted-session"]');
    const node = (label: string) => body.match(new RegExp(`^ {2}(\\w+)\\W+${label.replace(/[./]/g, '\\$&')}`, 'm'))?.[1];
    const evicted = node('UserSessionEvictedEvent');
    expect(body).toContain(`P0 --> ${evicted}`);
    expect(body).toContain(`${evicted} --> ${node('"oidc / oidc.revoke-evicted-session')}`);
  });

  it('serves a readable HTML page that escapes every value', async () => {
    const response = await app('/idt').app.fetch(new Request('http://api.test/idt/asyncapi'));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    const page = await response.text();
    expect(page).not.toMatch(/<script/i);
    expect(page).toContain('<code>UserSessionEvictedEvent</code>');
    expect(page).toContain('oidc.revoke-evicted-session');
    expect(page).toContain('notifications.mail-email-change');
    expect(page).toContain('href="/idt/asyncapi/v1.json"');
    expect(page).toContain('href="/idt/asyncapi/v1/flows"');
    expect(page).toContain('their &lt;email&gt; &amp; must confirm &quot;it&quot;.');
    expect(page).not.toContain('<email>');
    expect(page).toContain('&quot;sessionId&quot;');
  });

  it('stays out of the OpenAPI document and needs no credential', async () => {
    const { routes } = app();
    const document = generateOpenApiDocument({ routes, serverUrl: 'http://api.test' });
    expect(Object.keys(document.paths)).toEqual(['/health', '/health/ready']);
    for (const route of routes.filter((candidate) => candidate.path.startsWith('/asyncapi'))) {
      expect(route).toMatchObject({ auth: 'anonymous', ratePolicy: false, hidden: true });
    }
    expect(JSON.stringify(document)).not.toContain('asyncapi');
  });

  it('describes an empty catalog', async () => {
    const routes = createAsyncApiRoutes({ catalog: () => ({ events: [], handlers: [] }), serverUrl: 'http://api.test' });
    const empty = createHttpApp({ environment: 'Development', publicBaseUrl: 'http://api.test', routes });
    const document = (await (await empty.fetch(new Request('http://api.test/asyncapi/v1.json'))).json()) as Record<
      string,
      unknown
    >;
    expect(document).toMatchObject({ asyncapi: '3.0.0', channels: {}, operations: {} });
    expect(await (await empty.fetch(new Request('http://api.test/asyncapi/v1/flows'))).text()).toMatch(/^flowchart LR\n/);
    expect(await (await empty.fetch(new Request('http://api.test/asyncapi'))).text()).toContain('No events are registered.');
  });
});
