import { ProblemError } from '@idt/problem';
import { afterEach, describe, expect, it } from 'vitest';
import { createDnsTxtResolver } from '../src/domains/txt-resolver.js';
import { createDomainVerifier, VERIFICATION_PREFIX } from '../src/domains/verifier.js';
import { type DnsResponder, startDnsResponder } from './support/dns-responder.js';

const responders: DnsResponder[] = [];
afterEach(async () => {
  await Promise.all(responders.splice(0).map((responder) => responder.close()));
});

async function responder(options: Parameters<typeof startDnsResponder>[0] = {}) {
  const started = await startDnsResponder(options);
  responders.push(started);
  return started;
}

describe('domain verification by DNS TXT', () => {
  it('makes distinct idt-verification tokens', () => {
    const verifier = createDomainVerifier({ resolver: createDnsTxtResolver() });
    const token = verifier.createToken();
    expect(token).toMatch(/^idt-verification=[A-Za-z0-9_-]{43}$/);
    expect(verifier.createToken()).not.toBe(token);
  });

  it('verifies a domain whose TXT records hold the token, whatever the case of the name asked', async () => {
    const verifier = createDomainVerifier({ resolver: createDnsTxtResolver({ servers: [] }) });
    const token = verifier.createToken();
    const dns = await responder({ records: { 'acme.example': ['v=spf1 -all', token, `google-site-verification=abc`] } });
    const resolved = createDomainVerifier({ resolver: createDnsTxtResolver({ servers: [dns.server], timeoutMs: 1000 }) });
    expect(await resolved.verify('ACME.example.', token)).toEqual({ status: 'verified', domain: 'acme.example' });
    expect(dns.queries).toContain('acme.example');
  });

  it('joins a long record split in several character strings', async () => {
    const token = `${VERIFICATION_PREFIX}${'x'.repeat(300)}`;
    const dns = await responder({ records: { 'long.example': [token] } });
    const verifier = createDomainVerifier({ resolver: createDnsTxtResolver({ servers: [dns.server], timeoutMs: 1000 }) });
    expect((await verifier.verify('long.example', token)).status).toBe('verified');
  });

  it('answers not-found for another token, no TXT record, or a name that does not exist', async () => {
    const dns = await responder({ records: { 'acme.example': ['idt-verification=someone-else'], 'bare.example': [] } });
    const verifier = createDomainVerifier({ resolver: createDnsTxtResolver({ servers: [dns.server], timeoutMs: 1000 }) });
    const token = verifier.createToken();
    expect(await verifier.verify('acme.example', token)).toEqual({ status: 'not-found', domain: 'acme.example' });
    expect((await verifier.verify('bare.example', token)).status).toBe('not-found');
    expect((await verifier.verify('nowhere.example', token)).status).toBe('not-found');
    // A record equal to the bare prefix never verifies.
    dns.setTxt('empty.example', [VERIFICATION_PREFIX]);
    expect((await verifier.verify('empty.example', VERIFICATION_PREFIX)).status).toBe('not-found');
    // Published later: verified on the next attempt.
    dns.setTxt('acme.example', [token]);
    expect((await verifier.verify('acme.example', token)).status).toBe('verified');
  });

  it('answers dns-error when the server is down', async () => {
    const dns = await responder();
    const server = dns.server;
    await dns.close();
    responders.splice(0);
    const verifier = createDomainVerifier({ resolver: createDnsTxtResolver({ servers: [server], timeoutMs: 500 }) });
    const outcome = await verifier.verify('acme.example', verifier.createToken());
    expect(outcome.status).toBe('dns-error');
  });

  it('answers dns-error within the timeout when the server never answers', async () => {
    const dns = await responder({ silent: true });
    const verifier = createDomainVerifier({ resolver: createDnsTxtResolver({ servers: [dns.server], timeoutMs: 300 }) });
    const started = performance.now();
    const outcome = await verifier.verify('acme.example', verifier.createToken());
    const elapsed = performance.now() - started;
    expect(outcome).toMatchObject({ status: 'dns-error', domain: 'acme.example' });
    expect(elapsed).toBeLessThan(300 + 500);
  });

  it('refuses a name that is not a domain before asking anything', async () => {
    const dns = await responder();
    const verifier = createDomainVerifier({ resolver: createDnsTxtResolver({ servers: [dns.server] }) });
    await expect(verifier.verify('10.0.0.1', verifier.createToken())).rejects.toThrow(ProblemError);
    expect(dns.queries).toEqual([]);
  });
});
