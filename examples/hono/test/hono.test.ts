import { describeBadBodies, describeExampleApp, expectProblem, OVERSIZED_SETUP, postBody, SETUP_ADMIN } from '@idt/testing';
import { expect, it } from 'vitest';
import { startHonoApp } from '../src/app.js';

describeExampleApp('Hono on @hono/node-server with idt.fetch under /idt', startHonoApp);

describeBadBodies('Hono', startHonoApp, (app) => {
  it('closes the connection after refusing a body it did not read, so that the client’s next request does not land on it', async () => {
    for (const chunked of [false, true]) {
      const refused = await postBody(`${app().baseUrl}/v1/identity/setup/admin`, 'application/json', OVERSIZED_SETUP, chunked);
      expect(refused.status).toBe(413);
      expect(refused.headers.get('connection')).toBe('close');
      await refused.text();
      expect((await fetch(`${app().baseUrl}/v1/identity/setup/status`)).status).toBe(200);
    }
    // @hono/node-server closes a connection left with an unread body after 500 ms: the next requests are not on it.
    await new Promise((resolve) => setTimeout(resolve, 600));
    const malformed = await postBody(`${app().baseUrl}/v1/identity/setup/admin`, 'application/json', '{');
    expect(malformed.status).toBe(400);
  });

  it('answers a Content-Type that is not a media type with idt’s problem document', async () => {
    const nonsense = await postBody(`${app().baseUrl}/v1/identity/setup/admin`, 'json', JSON.stringify(SETUP_ADMIN));
    expect((await expectProblem(nonsense, 415, 'Http.ClientError')).detail).toBe('Send the body as application/json.');
  });
});
