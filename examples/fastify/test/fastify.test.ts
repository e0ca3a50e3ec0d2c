import { describeBadBodies, describeExampleApp, expectProblem, postBody, SETUP_ADMIN } from '@idt/testing';
import Fastify from 'fastify';
import { expect, it } from 'vitest';
import { idtPlugin, startFastifyApp } from '../src/app.js';

describeExampleApp('Fastify 5 with idt in a plugin under /idt', startFastifyApp);

describeBadBodies('Fastify 5', startFastifyApp, (app) => {
  it('answers a Content-Type header Fastify cannot parse with idt’s problem document, not Fastify’s error', async () => {
    const response = await postBody(`${app().baseUrl}/v1/identity/setup/admin`, 'json', JSON.stringify(SETUP_ADMIN), false, {
      'x-request-id': 'bad-type-1',
    });
    expect(response.headers.get('x-request-id')).toBe('bad-type-1');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const problem = await expectProblem(response, 415, 'Http.ClientError');
    expect(problem).toMatchObject({
      title: 'Unsupported Media Type',
      detail: 'The Content-Type header is not a media type this service accepts.',
    });
    expect(problem.traceId).toMatch(/^[0-9a-f]{32}$/);
  });

  it('leaves Fastify’s errors outside idt’s plugin, and its other errors inside, to the app', async () => {
    const outside = await postBody(`${app().baseUrl.replace(/\/idt$/, '')}/orders`, 'json', '{}');
    expect(outside.status).toBe(415);
    expect(outside.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await outside.json()).toMatchObject({ code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE' });

    // A host whose own hook refuses a request under /idt: its error, its answer.
    const host = Fastify();
    host.addHook('onRequest', async (request, reply) => {
      if (request.headers['x-blocked'] !== undefined) {
        reply.code(403);
        throw new Error('Blocked by the host');
      }
    });
    await host.register(idtPlugin(app().idt), { prefix: '/idt' });
    const origin = await host.listen({ port: 0, host: '127.0.0.1' });
    try {
      const blocked = await postBody(`${origin}/idt/v1/identity/setup/admin`, 'application/json', '{', false, {
        'x-blocked': '1',
      });
      expect(blocked.status).toBe(403);
      expect(await blocked.json()).toMatchObject({ statusCode: 403, message: 'Blocked by the host' });
      const refused = await postBody(`${origin}/idt/v1/identity/setup/admin`, 'application/json', '{');
      expect((await expectProblem(refused, 400, 'Http.ClientError')).detail).toBe('The request body is not valid JSON.');
    } finally {
      await host.close();
    }
  });
});
