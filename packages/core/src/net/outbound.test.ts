import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import {
  checkOutboundUrl,
  classifyAddress,
  createOutboundLookup,
  isMetadataHost,
  isNonPublicAddress,
  OutboundRefusedError,
  type OutboundResolver,
  outboundHost,
  refuseHost,
} from './outbound.js';

/** Every metadata target of issue 46, as written in a URL. */
const METADATA_URLS = [
  'http://169.254.169.254/latest/meta-data/',
  'http://169.254.170.2/v2/credentials',
  'http://169.254.169.253/',
  'http://100.100.100.200/latest/meta-data/',
  'http://192.0.0.192/latest/',
  'http://168.63.129.16/machine',
  'http://[fd00:ec2::254]/latest/',
  'http://[fd00:ec2::2]/',
  'http://[fd20:ce::254]/computeMetadata/v1/',
  'http://[fd00:c1::a9fe:a9fe]/opc/v2/',
  'http://[fe80::a9fe:a9fe]/openstack',
  'http://[::ffff:169.254.169.254]/latest',
  'http://[0:0:0:0:0:ffff:a9fe:a9fe]/latest',
  'http://[::169.254.169.254]/latest',
  'http://[64:ff9b::169.254.169.254]/latest',
  'http://[2002:a9fe:a9fe::1]/latest',
  'http://2852039166/latest',
  'http://0xa9fea9fe/latest',
  'http://0251.0376.0251.0376/latest',
  'http://169.254.43518/latest',
  'http://metadata.google.internal/computeMetadata/v1/',
  'http://METADATA.Google.Internal./computeMetadata/v1/',
  'http://metadata.goog/',
  'http://metadata/computeMetadata/v1/',
  'http://instance-data/latest/',
  'http://instance-data.ec2.internal/latest/',
  'http://instance-data.eu-west-1.compute.internal/latest/',
] as const;

/** A resolver answering from a table (names not in it do not resolve). */
function tableResolver(table: Record<string, string[]>, asked: string[] = []): OutboundResolver {
  return async (hostname) => {
    asked.push(hostname);
    const addresses = table[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
}

describe('classifyAddress', () => {
  it('classifies cloud metadata and link-local addresses as metadata, in every IPv6 form', () => {
    for (const address of [
      '169.254.169.254',
      '169.254.170.2',
      '169.254.169.253',
      '169.254.0.1',
      '100.100.100.200',
      '192.0.0.192',
      '168.63.129.16',
      'fd00:ec2::254',
      'FD00:EC2::254',
      'fd00:ec2::23',
      'fd00:0ec2:0000:0000:0000:0000:0000:0254',
      'fd20:ce::254',
      'fd00:c1::a9fe:a9fe',
      'fe80::1',
      'fe80::a9fe:a9fe%eth0',
      'febf::1',
      '[fd00:ec2::254]',
      '::ffff:169.254.169.254',
      '::ffff:a9fe:a9fe',
      '0:0:0:0:0:ffff:a9fe:a9fe',
      '::ffff:100.100.100.200',
      '::169.254.169.254',
      '::ffff:0:169.254.169.254',
      '64:ff9b::169.254.169.254',
      '64:ff9b::a9fe:a9fe',
      '2002:a9fe:a9fe::',
      '64:ff9b:1::a9fe:a9fe',
      // Teredo: a metadata server address, and a client address 169.254.169.254 (inverted: 5601:5601).
      '2001:0:a9fe:a9fe::1',
      '2001:0:4136:e378:8000:63bf:5601:5601',
    ]) {
      expect(classifyAddress(address), address).toBe('metadata');
    }
  });

  it('classifies loopback, private, CGNAT, unique-local, multicast and unspecified as non-public', () => {
    for (const address of [
      '127.0.0.1',
      '127.1.2.3',
      '10.0.0.8',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '100.64.0.1',
      '100.100.100.100',
      '100.127.255.255',
      '0.0.0.0',
      '192.0.0.8',
      '192.0.2.1',
      '198.18.0.1',
      '203.0.113.9',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fc00::1',
      'fd12:3456::1',
      'fd00:ec3::254',
      'fec0::1',
      'ff02::1',
      '2001:db8::1',
      '100::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::8.8.8.8',
      '64:ff9b::8.8.8.8',
      '64:ff9b:1::1',
      '64:ff9b:1::808:808',
      '2001:0:4136:e378:8000:63bf:3fff:fdd2',
      '2002:7f00:1::',
      '2002:0a00:0001::',
      'not-an-ip',
      '2852039166',
      '',
    ]) {
      expect(classifyAddress(address), address).toBe('non-public');
      expect(isNonPublicAddress(address), address).toBe(true);
    }
  });

  it('classifies globally routable addresses as public', () => {
    for (const address of [
      '8.8.8.8',
      '1.1.1.1',
      '172.32.0.1',
      '169.253.255.255',
      '169.255.0.1',
      '100.128.0.1',
      '168.63.129.17',
      '2606:4700:4700::1111',
      '::ffff:8.8.8.8',
      '2002:0808:0808::1',
      'fe00::1',
    ]) {
      expect(classifyAddress(address), address).toBe('public');
      expect(isNonPublicAddress(address), address).toBe(false);
    }
  });
});

describe('metadata host names', () => {
  it('compares case-insensitively and ignores trailing dots', () => {
    for (const host of [
      'metadata.google.internal',
      'METADATA.GOOGLE.INTERNAL',
      'metadata.google.internal.',
      'metadata.goog',
      'metadata',
      'Metadata.',
      'instance-data',
      'instance-data.ec2.internal',
      'instance-data.us-west-2.compute.internal',
      '[fd00:ec2::254]',
      '169.254.169.254',
    ]) {
      expect(isMetadataHost(host), host).toBe(true);
    }
    for (const host of ['metadata.example.com', 'google.internal', 'my-metadata', 'hooks.internal', 'localhost', '10.0.0.1']) {
      expect(isMetadataHost(host), host).toBe(false);
    }
    expect(outboundHost('[FD00:EC2::254]')).toBe('fd00:ec2::254');
    expect(outboundHost('Example.COM..')).toBe('example.com');
  });

  it('reads every IPv4 spelling through the WHATWG URL parser, which writes them dotted', () => {
    for (const raw of METADATA_URLS) {
      const url = new URL(raw);
      expect(refuseHost(url.hostname, true), raw).toMatchObject({ code: 'EREFUSEDHOST', reason: 'metadata' });
    }
    expect(new URL('http://2852039166/').hostname).toBe('169.254.169.254');
    expect(new URL('http://0x7f.1/').hostname).toBe('127.0.0.1');
    expect(refuseHost(new URL('http://0x7f.1/').hostname, false)).toMatchObject({ reason: 'non-public' });
    expect(refuseHost(new URL('http://0x7f.1/').hostname, true)).toBeUndefined();
    expect(refuseHost('hooks.example.com', false)).toBeUndefined();
  });
});

describe('checkOutboundUrl', () => {
  it('refuses metadata hosts, literals and DNS answers whatever allowPrivate says', async () => {
    const asked: string[] = [];
    const resolve = tableResolver(
      {
        'imds.example.test': ['169.254.169.254'],
        'dual.example.test': ['10.0.0.5', 'fd00:ec2::254'],
        'mapped.example.test': ['::ffff:169.254.169.254'],
        'lan.example.test': ['10.0.0.5'],
        'public.example.test': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
      },
      asked,
    );
    for (const allowPrivate of [false, true]) {
      for (const raw of METADATA_URLS) {
        expect(await checkOutboundUrl(raw, { allowPrivate, resolve }), raw).toMatchObject({ ok: false, reason: 'metadata' });
      }
      for (const host of ['imds.example.test', 'dual.example.test', 'mapped.example.test']) {
        const check = await checkOutboundUrl(`https://${host}/hook`, { allowPrivate, resolve });
        expect(check, host).toMatchObject({ ok: false, reason: 'metadata', host });
        expect(check.ok ? '' : check.message).toMatch(/cloud metadata address/);
      }
    }
    // Metadata names are refused without a DNS query.
    expect(asked.filter((host) => host.includes('metadata') || host.startsWith('instance-data'))).toEqual([]);
    expect(await checkOutboundUrl('https://lan.example.test/', { allowPrivate: false, resolve })).toMatchObject({
      ok: false,
      reason: 'non-public',
      address: '10.0.0.5',
      message: 'lan.example.test is a loopback or private address.',
    });
    expect(await checkOutboundUrl('https://lan.example.test/', { allowPrivate: true, resolve })).toEqual({
      ok: true,
      host: 'lan.example.test',
      addresses: ['10.0.0.5'],
    });
    expect(await checkOutboundUrl('https://public.example.test/', { allowPrivate: false, resolve })).toMatchObject({ ok: true });
    expect(await checkOutboundUrl('https://[::1]:8443/', { allowPrivate: false, resolve })).toMatchObject({
      ok: false,
      reason: 'non-public',
    });
    expect(await checkOutboundUrl('https://[::1]:8443/', { allowPrivate: true, resolve })).toMatchObject({
      ok: true,
      addresses: ['::1'],
    });
    expect(await checkOutboundUrl('https://nowhere.example.test/', { allowPrivate: true, resolve })).toMatchObject({
      ok: false,
      reason: 'unresolvable',
    });
  });

  it('gives up on DNS after the time limit', async () => {
    const never: OutboundResolver = () => new Promise(() => {});
    expect(
      await checkOutboundUrl('https://slow.example.test/', { allowPrivate: true, resolve: never, timeoutMs: 5 }),
    ).toMatchObject({ ok: false, reason: 'unresolvable' });
  });
});

describe('createOutboundLookup', () => {
  const lookupOf = (lookup: ReturnType<typeof createOutboundLookup>, host: string, all: boolean) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
      lookup(host, { all }, (error, address) => resolve({ error, address })),
    );

  it('applies the rule to every answer: metadata always refused, private only when not allowed', async () => {
    const asked: string[] = [];
    const resolve = tableResolver(
      {
        'imds.example.test': ['169.254.169.254'],
        'second.example.test': ['127.0.0.1', '::ffff:a9fe:a9fe'],
        'lan.example.test': ['10.0.0.5'],
      },
      asked,
    );
    for (const allowPrivate of [false, true]) {
      const lookup = createOutboundLookup({ allowPrivate, resolve });
      for (const host of ['imds.example.test', 'second.example.test', 'metadata.google.internal', 'instance-data']) {
        for (const all of [false, true]) {
          const { error } = await lookupOf(lookup, host, all);
          expect(error, host).toBeInstanceOf(OutboundRefusedError);
          expect(error, host).toMatchObject({ code: 'EREFUSEDHOST', reason: 'metadata' });
        }
      }
    }
    expect(asked).not.toContain('metadata.google.internal');
    expect(asked).not.toContain('instance-data');
    const strict = await lookupOf(createOutboundLookup({ allowPrivate: false, resolve }), 'lan.example.test', false);
    expect(strict.error).toMatchObject({ reason: 'non-public', message: expect.stringMatching(/loopback or private/) });
    const relaxed = createOutboundLookup({ allowPrivate: true, resolve });
    expect(await lookupOf(relaxed, 'lan.example.test', false)).toEqual({ error: null, address: '10.0.0.5' });
    expect(await lookupOf(relaxed, 'lan.example.test', true)).toEqual({
      error: null,
      address: [{ address: '10.0.0.5', family: 4 }],
    });
    expect((await lookupOf(relaxed, 'nowhere.example.test', false)).error).toMatchObject({ code: 'ENOTFOUND' });
  });

  it('keeps node:http from connecting to a name that resolves to a metadata address', async () => {
    const resolve = tableResolver({ 'imds.example.test': ['169.254.169.254'] });
    const error = await new Promise<Error>((resolveError, reject) => {
      const outgoing = request('http://imds.example.test/latest/meta-data/', {
        agent: false,
        lookup: createOutboundLookup({ allowPrivate: true, resolve }),
      });
      outgoing.on('response', () => reject(new Error('a response came')));
      outgoing.on('error', resolveError);
      outgoing.end();
    });
    expect(error).toBeInstanceOf(OutboundRefusedError);
    expect(error.message).toBe(
      'The host imds.example.test resolves to 169.254.169.254, a cloud metadata address, which is always refused',
    );
  });
});
