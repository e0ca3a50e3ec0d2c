import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import type { OutboundResolver } from '@idt/core';

/**
 * Cloud metadata targets as a client or an administrator might write them:
 * IPv4, IPv6, mapped and other embedded forms, other IPv4 spellings (which
 * the WHATWG URL parser writes dotted), names. Every one is refused whatever
 * the allow-private-hosts settings say.
 */
export const METADATA_URLS: readonly string[] = [
  'http://169.254.169.254/latest',
  'https://169.254.169.254/latest',
  'http://169.254.169.254/latest/meta-data/',
  'http://169.254.170.2/v2/credentials',
  'http://100.100.100.200/latest/meta-data/',
  'http://192.0.0.192/latest/',
  'http://168.63.129.16/machine',
  'http://[fd00:ec2::254]/latest',
  'http://[fd20:ce::254]/computeMetadata/v1/',
  'http://[fe80::a9fe:a9fe]/openstack',
  'http://[::ffff:169.254.169.254]/latest',
  'http://[::ffff:a9fe:a9fe]/latest',
  'http://[0:0:0:0:0:ffff:a9fe:a9fe]/latest',
  'http://[64:ff9b::169.254.169.254]/latest',
  'http://2852039166/latest',
  'http://0xa9fea9fe/latest',
  'http://0251.0376.0251.0376/latest',
  'http://metadata.google.internal/computeMetadata/v1/',
  'http://Metadata.Google.Internal./computeMetadata/v1/',
  'http://METADATA.google.internal./computeMetadata/v1/',
  'http://metadata.goog/',
  'http://metadata/computeMetadata/v1/',
  'http://instance-data/latest/',
  'http://instance-data.ec2.internal/latest/',
];

/** Host names that {@link tableResolver} given this table answers with a metadata address (one among others too). */
export const RESOLVES_TO_METADATA: Readonly<Record<string, readonly string[]>> = {
  'imds.example.test': ['169.254.169.254'],
  'imds6.example.test': ['fd00:ec2::254'],
  'mapped.example.test': ['::ffff:169.254.169.254'],
  'mixed.example.test': ['127.0.0.1', '100.100.100.200'],
};

/**
 * A resolver for the outbound guard answering from a table (other names do
 * not resolve), which a test may change as it goes (`answers.set`); records
 * every name it was asked.
 */
export function tableResolver(table: Readonly<Record<string, readonly string[]>> = {}) {
  const answers = new Map<string, readonly string[]>(Object.entries(table));
  const asked: string[] = [];
  const resolve: OutboundResolver = async (hostname) => {
    asked.push(hostname);
    const addresses = answers.get(hostname);
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, asked, answers };
}

/** Records every address a client socket of this process tries to connect to (node:net's diagnostics channel). */
export function watchConnections() {
  const attempts: string[] = [];
  const onSocket = (message: unknown) => {
    (message as { socket: Socket }).socket.on('connectionAttempt', (ip: string) => attempts.push(ip));
  };
  subscribe('net.client.socket', onSocket);
  return { attempts, stop: () => unsubscribe('net.client.socket', onSocket) };
}
