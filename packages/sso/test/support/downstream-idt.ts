import { Browser, type TestDialect } from '@idt/testing';
import { afterAll, beforeAll } from 'vitest';
import { type DnsResponder, startDnsResponder } from './dns-responder.js';
import { begin, handleOf } from './sign-in.js';
import { servicesOf, startSsoInstance } from './sso-instance.js';
import { DOWNSTREAM, signInAtUpstream } from './upstream-idt.js';

/** The idt that signs people in through an upstream idt: the sso instance and its DNS responder. */
export interface DownstreamIdt extends Awaited<ReturnType<typeof startSsoInstance>> {
  /** The DNS the instance verifies domains with (`IDT_SSO_DNS_SERVERS`). */
  readonly dns: DnsResponder;
}

/**
 * The downstream idt of a `describe` block, on `dialect`: an sso instance
 * whose issuer is {@link DOWNSTREAM} (private hosts allowed, so it reaches the
 * upstream on loopback) with its own DNS responder, started before the
 * block's tests and closed after them. Read its fields in tests and hooks,
 * once it started.
 *
 * @example
 * const downstream = useDownstreamIdt(dialect);
 * it('lists', async () => expect((await downstream.call('GET', '/v1/audit/events')).status).toBe(401));
 */
export function useDownstreamIdt(dialect: TestDialect): DownstreamIdt {
  const downstream = {} as DownstreamIdt;
  beforeAll(async () => {
    const dns = await startDnsResponder();
    Object.assign(downstream, { dns });
    Object.assign(
      downstream,
      await startSsoInstance({
        dialect,
        sso: { allowPrivateHosts: true },
        env: { IDT_SSO_DNS_SERVERS: dns.server },
        config: { issuer: DOWNSTREAM },
      }),
    );
  });
  afterAll(async () => {
    await downstream.server?.close();
    await downstream.dns?.close();
  });
  return downstream;
}

/**
 * A whole sign-in at the OpenID connection `connectionId` of `server`, as the
 * interaction `uid`: begins it, signs in at the upstream as `email` in a new
 * browser, and follows the callback; the federation's outcome.
 */
export async function signInThroughUpstream(server: DownstreamIdt['server'], connectionId: string, uid: string, email: string) {
  const callback = await signInAtUpstream(await begin(server, connectionId, uid), new Browser(), email);
  const response = await server.fetch(`${callback.pathname}${callback.search}`, { redirect: 'manual' });
  return servicesOf(server).federation.consume(await handleOf(response, uid), uid);
}

/** A sign-in at the connection `connectionId` that the upstream refuses (`error=access_denied`): the federation's outcome. */
export async function refusedByUpstream(server: DownstreamIdt['server'], connectionId: string, uid: string) {
  const state = new URL(await begin(server, connectionId, uid)).searchParams.get('state') ?? '';
  const denied = await server.fetch(`/sso/oidc/callback?state=${encodeURIComponent(state)}&error=access_denied`, {
    redirect: 'manual',
  });
  return servicesOf(server).federation.consume(await handleOf(denied, uid), uid);
}
