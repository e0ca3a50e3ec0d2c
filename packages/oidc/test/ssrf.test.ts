import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createBackchannelNotifier, isNonPublicAddress } from '../src/index.js';

describe('back-channel SSRF guard', () => {
  it('classifies loopback, private, link-local and unique-local addresses as non-public', () => {
    for (const address of [
      '127.0.0.1',
      '127.1.2.3',
      '10.0.0.8',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      'not-an-ip',
    ]) {
      expect(isNonPublicAddress(address), address).toBe(true);
    }
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect(isNonPublicAddress(address), address).toBe(false);
    }
  });

  it('refuses names that resolve to loopback and literal private addresses, and delivers when allowed', async () => {
    const hits: string[] = [];
    const server = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.writeHead(200).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const { generateKeyPairSync } = await import('node:crypto');
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const signingKey = async () => ({ ...privateKey.export({ format: 'jwk' }), kid: 'k', alg: 'RS256' });
    try {
      const guarded = createBackchannelNotifier({ issuer: 'https://id.example.com', allowPrivateHosts: false, signingKey });
      const refused = await guarded.notify(
        [
          { clientId: 'by-name', backchannelLogoutUri: `http://localhost:${port}/a` },
          { clientId: 'by-ip', backchannelLogoutUri: `http://127.0.0.1:${port}/b` },
          { clientId: 'metadata', backchannelLogoutUri: 'http://169.254.169.254/latest' },
        ],
        'user',
        'sid',
      );
      expect(refused.map((result) => result.delivered)).toEqual([false, false, false]);
      for (const result of refused) expect(result.error).toMatch(/loopback or private/);
      expect(hits).toEqual([]);
      const allowed = createBackchannelNotifier({ issuer: 'https://id.example.com', allowPrivateHosts: true, signingKey });
      const delivered = await allowed.notify(
        [{ clientId: 'ok', backchannelLogoutUri: `http://localhost:${port}/c` }],
        'user',
        'sid',
      );
      expect(delivered[0]).toMatchObject({ delivered: true, attempts: 1 });
      expect(hits).toEqual(['/c']);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
