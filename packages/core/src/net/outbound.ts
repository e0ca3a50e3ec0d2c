import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';

/**
 * How an outbound request may treat an address:
 *
 * - `public`: globally routable; always allowed;
 * - `non-public`: loopback, private, shared (CGNAT), unique-local,
 *   multicast, unspecified, documentation and other special-purpose ranges;
 *   refused unless the deployment allows private hosts (local demos and tests);
 * - `metadata`: the instance-metadata and platform services of cloud hosts
 *   and every link-local address; refused whatever the setting says.
 */
export type OutboundAddressKind = 'public' | 'non-public' | 'metadata';

/** Why an outbound target is refused. */
export type OutboundRefusalReason = 'metadata' | 'non-public';

/** A network as its first address and prefix length. */
interface Range<T> {
  readonly network: T;
  readonly prefix: number;
}

function parseV4(text: string): number {
  let value = 0;
  for (const part of text.split('.')) value = value * 256 + Number(part);
  return value;
}

/** Parses an IPv6 address `isIP` accepted (no zone) into its 128 bits. */
function parseV6(text: string): bigint {
  let body = text;
  const lastColon = body.lastIndexOf(':');
  const dotted = body.slice(lastColon + 1);
  if (dotted.includes('.')) {
    // A trailing dotted IPv4 part is the last two groups.
    const v4 = parseV4(dotted);
    body = `${body.slice(0, lastColon + 1)}${Math.floor(v4 / 65536).toString(16)}:${(v4 % 65536).toString(16)}`;
  }
  const [head = '', rest] = body.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((group) => Number.parseInt(group, 16)));
  const front = groups(head);
  const back = rest === undefined ? [] : groups(rest);
  const zeros = new Array<number>(Math.max(8 - front.length - back.length, 0)).fill(0);
  return [...front, ...zeros, ...back].reduce((value, group) => (value << 16n) | BigInt(group), 0n);
}

const v4 = (entries: ReadonlyArray<readonly [string, number]>): readonly Range<number>[] =>
  entries.map(([network, prefix]) => ({ network: parseV4(network), prefix }));
const v6 = (entries: ReadonlyArray<readonly [string, number]>): readonly Range<bigint>[] =>
  entries.map(([network, prefix]) => ({ network: parseV6(network), prefix }));

/**
 * Always refused: link-local 169.254.0.0/16 (the AWS, GCP, Azure, OpenStack,
 * DigitalOcean, Hetzner and Oracle metadata at 169.254.169.254, ECS task
 * metadata at 169.254.170.2, the AWS resolver and time service), Alibaba
 * Cloud's metadata (100.100.100.200), Oracle Cloud Classic's (192.0.0.192)
 * and Azure's WireServer (168.63.129.16, a public address only Azure VMs reach).
 */
const METADATA_V4 = v4([
  ['169.254.0.0', 16],
  ['100.100.100.200', 32],
  ['192.0.0.192', 32],
  ['168.63.129.16', 32],
]);

/** Refused unless private hosts are allowed (IANA special-purpose ranges that are not globally reachable). */
const NON_PUBLIC_V4 = v4([
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
]);

/**
 * Always refused: link-local fe80::/10 (OpenStack's fe80::a9fe:a9fe among
 * them), AWS's instance services under fd00:ec2::/32 (metadata
 * fd00:ec2::254, resolver fd00:ec2::2, time fd00:ec2::123), GCP's metadata
 * (fd20:ce::254) and Oracle Cloud's (fd00:c1::a9fe:a9fe).
 */
const METADATA_V6 = v6([
  ['fe80::', 10],
  ['fd00:ec2::', 32],
  ['fd20:ce::254', 128],
  ['fd00:c1::a9fe:a9fe', 128],
]);

/** Refused unless private hosts are allowed. IPv4 embedded in IPv6 is judged by its IPv4 address (see {@link classifyAddress}). */
const NON_PUBLIC_V6 = v6([
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001:2::', 48],
  ['2001:db8::', 32],
  ['3fff::', 20],
  ['fc00::', 7],
  ['fec0::', 10],
  ['ff00::', 8],
]);

/**
 * Host names of metadata services, refused before any DNS query: GCP's
 * `metadata.google.internal`, `metadata.goog` and the short `metadata`, and
 * AWS's `instance-data`, `instance-data.ec2.internal` and
 * `instance-data.<region>.compute.internal`. Whatever else resolves to a
 * metadata address is refused on the DNS answer.
 */
const METADATA_HOST_NAMES: ReadonlySet<string> = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
]);
const METADATA_HOST_PATTERN = /^instance-data\.[a-z0-9-]+\.compute\.internal$/;

function inRange4(address: number, { network, prefix }: Range<number>): boolean {
  const size = 2 ** (32 - prefix);
  return Math.floor(address / size) === Math.floor(network / size);
}

function inRange6(address: bigint, { network, prefix }: Range<bigint>): boolean {
  const shift = BigInt(128 - prefix);
  return address >> shift === network >> shift;
}

function classifyV4(address: number): OutboundAddressKind {
  if (METADATA_V4.some((range) => inRange4(address, range))) return 'metadata';
  if (NON_PUBLIC_V4.some((range) => inRange4(address, range))) return 'non-public';
  return 'public';
}

const LOW_32 = 0xffff_ffffn;

function classifyV6(address: bigint): OutboundAddressKind {
  const embedded = Number(address & LOW_32);
  // IPv4-mapped ::ffff:a.b.c.d: the connection is IPv4 to a.b.c.d.
  if (address >> 32n === 0xffffn) return classifyV4(embedded);
  // IPv4-compatible ::a.b.c.d (deprecated), SIIT ::ffff:0:a.b.c.d, NAT64 64:ff9b::a.b.c.d and the
  // local-use translation prefix 64:ff9b:1::/48 (RFC 8215, its /96 layout): never public.
  const compatible = address >> 32n === 0n && address > 1n;
  const translated =
    address >> 32n === 0xffff_0000n || address >> 32n === 0x64_ff9b_0000_0000_0000_0000n || address >> 80n === 0x64_ff9b_0001n;
  if (compatible || translated) return classifyV4(embedded) === 'metadata' ? 'metadata' : 'non-public';
  // Teredo 2001::/32 tunnels to its server's IPv4 address (bits 32 to 63) and the client's (the last 32 bits,
  // inverted): a tunnel endpoint, never a webhook receiver.
  if (address >> 96n === 0x2001_0000n) {
    const server = Number((address >> 64n) & LOW_32);
    const client = Number(~address & LOW_32);
    return classifyV4(server) === 'metadata' || classifyV4(client) === 'metadata' ? 'metadata' : 'non-public';
  }
  // 6to4 2002:a.b.c.d::/48 carries the IPv4 address in bits 16 to 47.
  if (address >> 112n === 0x2002n) {
    const kind = classifyV4(Number((address >> 80n) & LOW_32));
    if (kind !== 'public') return kind;
  }
  if (METADATA_V6.some((range) => inRange6(address, range))) return 'metadata';
  if (NON_PUBLIC_V6.some((range) => inRange6(address, range))) return 'non-public';
  return 'public';
}

/** The bare address or host of a URL's `hostname`: brackets, an IPv6 zone and trailing dots removed, lower-cased. */
export function outboundHost(hostname: string): string {
  let host = hostname.trim().toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  const zone = host.indexOf('%');
  if (zone !== -1 && isIP(host.slice(0, zone)) === 6) host = host.slice(0, zone);
  return host.replace(/\.+$/, '');
}

/**
 * Classifies an IP address (dotted IPv4, or IPv6 in any notation, with or
 * without brackets or a zone). IPv4 embedded in IPv6 is judged by its IPv4
 * part: IPv4-mapped `::ffff:a.b.c.d` exactly as a.b.c.d, the IPv4-compatible,
 * SIIT and NAT64 (64:ff9b::/96) forms as non-public (metadata when the IPv4
 * part is), 6to4 (2002::/16) as its IPv4 part when that is not public.
 * Anything that is not an IP address is `non-public`.
 *
 * Only canonical dotted IPv4 is an address here: the WHATWG URL parser
 * rewrites `http://2852039166/`, `http://0xa9fea9fe/` and
 * `http://0251.0376.0251.0376/` to `169.254.169.254`, so classify a URL's
 * `hostname`, not the text the URL was written with.
 *
 * @example
 * classifyAddress('169.254.169.254'); // 'metadata'
 * classifyAddress('[::ffff:a9fe:a9fe]'); // 'metadata'
 * classifyAddress('10.0.0.8'); // 'non-public'
 * classifyAddress('8.8.8.8'); // 'public'
 */
export function classifyAddress(address: string): OutboundAddressKind {
  const text = outboundHost(address);
  const family = isIP(text);
  if (family === 4) return classifyV4(parseV4(text));
  if (family === 6) return classifyV6(parseV6(text));
  return 'non-public';
}

/** Whether an address is a cloud metadata or link-local address, refused whatever the private-host setting says. */
export function isMetadataAddress(address: string): boolean {
  return classifyAddress(address) === 'metadata';
}

/**
 * Whether an address is not globally routable: loopback, private, link-local,
 * CGNAT, unique-local, multicast, unspecified, documentation ranges, the
 * metadata addresses, or not an IP address at all.
 */
export function isNonPublicAddress(address: string): boolean {
  return classifyAddress(address) !== 'public';
}

/**
 * Whether a host name names a cloud metadata service (compared
 * case-insensitively, trailing dots ignored), or is a metadata address.
 *
 * @example
 * isMetadataHost('METADATA.Google.Internal.'); // true
 */
export function isMetadataHost(hostname: string): boolean {
  const host = outboundHost(hostname);
  if (isIP(host) !== 0) return isMetadataAddress(host);
  return METADATA_HOST_NAMES.has(host) || METADATA_HOST_PATTERN.test(host);
}

/**
 * An outbound target refused by the guard; `code` is `EREFUSEDHOST`, so it
 * can travel as a DNS lookup error through node:http.
 */
export class OutboundRefusedError extends Error {
  readonly code = 'EREFUSEDHOST';

  constructor(
    /** The host as the URL names it. */
    readonly host: string,
    readonly reason: OutboundRefusalReason,
    /** The refused address, when the host is a name that resolved to it. */
    readonly address?: string,
  ) {
    super(
      reason === 'metadata'
        ? `The host ${host} ${address && address !== outboundHost(host) ? `resolves to ${address},` : 'is'} a cloud metadata address, which is always refused`
        : `The host ${host} resolves to a loopback or private address, which is not allowed`,
    );
    this.name = 'OutboundRefusedError';
  }
}

/**
 * Judges the addresses of `host`: a metadata address refuses it always (and
 * outranks a private one), another non-public address unless `allowPrivate`.
 */
function refuseAddresses(host: string, addresses: readonly string[], allowPrivate: boolean): OutboundRefusedError | undefined {
  const kinds = addresses.map((address) => [address, classifyAddress(address)] as const);
  const metadata = kinds.find(([, kind]) => kind === 'metadata');
  if (metadata) return new OutboundRefusedError(host, 'metadata', metadata[0]);
  const private_ = allowPrivate ? undefined : kinds.find(([, kind]) => kind === 'non-public');
  if (private_) return new OutboundRefusedError(host, 'non-public', private_[0]);
  return undefined;
}

/**
 * What can be judged of a URL's host without DNS: a metadata host name, or
 * an IP literal (node:http connects to literals without a lookup, so a sender
 * checks them here). Names are judged again on their DNS answers by
 * {@link createOutboundLookup}.
 */
export function refuseHost(hostname: string, allowPrivate: boolean): OutboundRefusedError | undefined {
  const host = outboundHost(hostname);
  if (isIP(host) !== 0) return refuseAddresses(hostname, [host], allowPrivate);
  if (isMetadataHost(host)) return new OutboundRefusedError(hostname, 'metadata');
  return undefined;
}

/** One DNS answer. */
export interface OutboundAddress {
  readonly address: string;
  readonly family: number;
}

/**
 * Resolves a host name to every address the connection might use; the
 * system resolver (`dns.lookup`, so /etc/hosts too) by default. Tests and
 * hosts with their own resolution inject one.
 */
export type OutboundResolver = (
  hostname: string,
  options: { readonly family?: number; readonly hints?: number },
) => Promise<readonly OutboundAddress[]>;

/** The system resolver: `dns.lookup` with `all: true`. */
export const systemResolver: OutboundResolver = (hostname, options) =>
  dnsLookup(hostname, {
    all: true,
    ...(options.family ? { family: options.family } : {}),
    ...(options.hints ? { hints: options.hints } : {}),
  });

/** Options of {@link createOutboundLookup} and {@link checkOutboundUrl}. */
export interface OutboundGuardOptions {
  /** Accept loopback and private addresses (local demos and tests); metadata addresses stay refused. */
  readonly allowPrivate: boolean;
  /** The resolver; {@link systemResolver} by default. */
  readonly resolve?: OutboundResolver;
}

/**
 * A `lookup` for node:http(s) and node:net that refuses a host when any of
 * its DNS answers is refused (metadata always; other non-public addresses
 * unless `allowPrivate`), and metadata host names before asking DNS. The
 * connection uses the addresses this lookup returns, so a host cannot rebind
 * between the check and the connection. A refusal is an
 * {@link OutboundRefusedError} (`code: 'EREFUSEDHOST'`) on the request's
 * `error` event.
 *
 * @example
 * http.request(url, { method: 'POST', agent: false, lookup: createOutboundLookup({ allowPrivate: false }) });
 */
export function createOutboundLookup(options: OutboundGuardOptions): LookupFunction {
  const resolve = options.resolve ?? systemResolver;
  return (hostname, lookupOptions, callback) => {
    const opts = (typeof lookupOptions === 'number' ? { family: lookupOptions } : (lookupOptions ?? {})) as {
      family?: number | string;
      hints?: number;
      all?: boolean;
    };
    const fail = (error: NodeJS.ErrnoException) => callback(error, opts.all ? [] : '', 0);
    const early = refuseHost(hostname, options.allowPrivate);
    if (early) return fail(early);
    const family = opts.family === 'IPv4' ? 4 : opts.family === 'IPv6' ? 6 : Number(opts.family ?? 0);
    resolve(hostname, { ...(family ? { family } : {}), ...(opts.hints ? { hints: opts.hints } : {}) }).then(
      (addresses) => {
        const refused = refuseAddresses(
          hostname,
          addresses.map((entry) => entry.address),
          options.allowPrivate,
        );
        if (refused) return fail(refused);
        const first = addresses[0];
        if (!first) return fail(Object.assign(new Error(`No address for ${hostname}`), { code: 'ENOTFOUND' }));
        if (opts.all)
          return callback(
            null,
            addresses.map(({ address, family }) => ({ address, family })),
          );
        return callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => fail(error),
    );
  };
}

/** What {@link checkOutboundUrl} found. */
export type OutboundUrlCheck =
  | {
      readonly ok: true;
      readonly host: string;
      /** The addresses the host resolved to (the literal itself for an IP host). */
      readonly addresses: readonly string[];
    }
  | {
      readonly ok: false;
      readonly host: string;
      /** `unresolvable`: no answer within the time limit, or none at all. */
      readonly reason: OutboundRefusalReason | 'unresolvable';
      readonly address?: string;
      /** A sentence for a problem document. */
      readonly message: string;
    };

/** Options of {@link checkOutboundUrl}. */
export interface OutboundUrlCheckOptions extends OutboundGuardOptions {
  /** How long to wait for DNS, in milliseconds (3,000); no answer by then is `unresolvable`. */
  readonly timeoutMs?: number;
}

/**
 * Checks a target when it is registered (a webhook endpoint, a back-channel
 * logout URI): the host name, the literal address or every address the name
 * resolves to now. Deliveries check again through
 * {@link createOutboundLookup}, since DNS answers change.
 *
 * @example
 * const check = await checkOutboundUrl(new URL(input.url), { allowPrivate: false });
 * if (!check.ok && check.reason !== 'unresolvable') throw new ProblemError('Webhooks.PrivateHostRefused', check.message);
 */
export async function checkOutboundUrl(url: URL | string, options: OutboundUrlCheckOptions): Promise<OutboundUrlCheck> {
  const hostname = (typeof url === 'string' ? new URL(url) : url).hostname;
  const host = outboundHost(hostname);
  const refusal = (error: OutboundRefusedError): OutboundUrlCheck => ({
    ok: false,
    host: hostname,
    reason: error.reason,
    ...(error.address ? { address: error.address } : {}),
    message:
      error.reason === 'metadata'
        ? `${hostname} is a cloud metadata address, which is refused even where private hosts are allowed.`
        : `${hostname} is a loopback or private address.`,
  });
  const early = refuseHost(hostname, options.allowPrivate);
  if (early) return refusal(early);
  if (isIP(host) !== 0) return { ok: true, host: hostname, addresses: [host] };
  const resolve = options.resolve ?? systemResolver;
  const unresolvable: OutboundUrlCheck = {
    ok: false,
    host: hostname,
    reason: 'unresolvable',
    message: `${hostname} does not resolve.`,
  };
  let timer: NodeJS.Timeout | undefined;
  let addresses: readonly OutboundAddress[];
  try {
    addresses = await Promise.race([
      resolve(host, {}),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('DNS timeout')), options.timeoutMs ?? 3000);
        timer.unref?.();
      }),
    ]);
  } catch {
    return unresolvable;
  } finally {
    clearTimeout(timer);
  }
  if (addresses.length === 0) return unresolvable;
  const refused = refuseAddresses(
    hostname,
    addresses.map((entry) => entry.address),
    options.allowPrivate,
  );
  if (refused) return refusal(refused);
  return { ok: true, host: hostname, addresses: addresses.map((entry) => entry.address) };
}
