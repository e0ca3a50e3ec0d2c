import { generateKeyPairSync, randomBytes, sign, X509Certificate } from 'node:crypto';

/** A key pair and a self-signed certificate over it, all PEM. */
export interface TestCertificate {
  readonly privateKeyPem: string;
  readonly certificatePem: string;
  /** The certificate's base64 DER body, as metadata documents carry it. */
  readonly certificateBase64: string;
}

function length(size: number): Buffer {
  if (size < 0x80) return Buffer.from([size]);
  const bytes: number[] = [];
  for (let rest = size; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function der(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
}

const sequence = (...content: Buffer[]) => der(0x30, ...content);
const SHA256_WITH_RSA = sequence(Buffer.from('06092a864886f70d01010b', 'hex'), Buffer.from('0500', 'hex'));

function commonName(name: string): Buffer {
  const attribute = sequence(Buffer.from('0603550403', 'hex'), der(0x0c, Buffer.from(name, 'utf8')));
  return sequence(der(0x31, attribute));
}

function utcTime(instant: Date): Buffer {
  const text = instant.toISOString().replace(/[-:T]/g, '').slice(2, 14);
  return der(0x17, Buffer.from(`${text}Z`, 'ascii'));
}

/**
 * Generates an RSA key pair and a version 1 self-signed X.509 certificate
 * (SHA-256 with RSA), encoded by hand because node:crypto parses
 * certificates but does not make them.
 */
export function createTestCertificate(name = 'idt test identity provider'): TestCertificate {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const serial = randomBytes(8);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const now = Date.now();
  const tbs = sequence(
    der(0x02, serial),
    SHA256_WITH_RSA,
    commonName(name),
    sequence(utcTime(new Date(now - 86_400_000)), utcTime(new Date(now + 365 * 86_400_000))),
    commonName(name),
    publicKey.export({ type: 'spki', format: 'der' }),
  );
  const signature = sign('sha256', tbs, privateKey);
  const certificate = sequence(tbs, SHA256_WITH_RSA, der(0x03, Buffer.from([0]), signature));
  const certificateBase64 = certificate.toString('base64');
  const certificatePem = `-----BEGIN CERTIFICATE-----\n${certificateBase64.match(/.{1,64}/g)?.join('\n')}\n-----END CERTIFICATE-----\n`;
  new X509Certificate(certificatePem); // fails loudly if the encoding is wrong
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    certificatePem,
    certificateBase64,
  };
}
