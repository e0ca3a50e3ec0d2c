import { type caller, expectJson, type TestIdt } from '@idt/testing';
import { expect } from 'vitest';
import type { DnsResponder } from './dns-responder.js';
import { servicesOf } from './sso-instance.js';

type Call = ReturnType<typeof caller>;

/** Adds a domain to an organization and verifies it through the test DNS responder. */
export async function verifyDomain(call: Call, dns: DnsResponder, organizationId: string, token: string, domain: string) {
  const base = `/v1/identity/organizations/${organizationId}/domains`;
  const added = await expectJson(await call('POST', base, { token, body: { domain } }), 201);
  dns.setTxt(domain, [added.verification.value]);
  await expectJson(await call('POST', `${base}/${added.id}/verify`, { token }));
  return added.id as string;
}

/** Starts a sign-in at a connection as the interaction `uid` would: the URL the browser is sent to. */
export async function begin(server: TestIdt, connectionId: string, uid: string, loginHint?: string): Promise<string> {
  const start = await servicesOf(server).federation.begin(connectionId, {
    interactionUid: uid,
    returnPath: `/interaction/${uid}/federated`,
    ...(loginHint ? { loginHint } : {}),
  });
  if (start.kind !== 'redirect') throw new Error(`begin failed: ${start.reason}`);
  return start.url;
}

/** Where a callback's page sends the browser on (its `meta refresh`, which the page's link repeats). */
export async function continuesTo(response: Response): Promise<string> {
  const body = await response.text();
  expect(response.status, body).toBe(200);
  expect(response.headers.get('location')).toBeNull();
  const refresh = /<meta http-equiv="refresh" content="0;url=([^"]+)">/.exec(body)?.[1] ?? '';
  const location = refresh.replace(/&amp;/g, '&');
  expect(body).toContain(`<a href="${refresh}">Continue</a>`);
  return location;
}

/** The handle of a callback's page that sends the browser back to the interaction `uid`. */
export async function handleOf(response: Response, uid: string): Promise<string> {
  const location = await continuesTo(response);
  expect(location.startsWith(`/interaction/${uid}/federated?result=`), location).toBe(true);
  return new URL(location, 'http://x').searchParams.get('result') ?? '';
}

/** Asserts the error page of a callback of no pending sign-in. */
export async function expectErrorPage(response: Response, organizationName?: string): Promise<string> {
  const body = await response.text();
  expect(response.status, body).toBe(400);
  expect(response.headers.get('content-type')).toContain('text/html');
  expect(body).toContain('Go back to the application and sign in again');
  if (organizationName) expect(body).toContain(`${organizationName}’s identity provider`);
  expect(body).not.toMatch(/Error:|at .*\.ts|stack/);
  return body;
}
