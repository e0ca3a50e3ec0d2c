import { createSocket, type RemoteInfo } from 'node:dgram';

/** A DNS server on 127.0.0.1 for tests: TXT answers for configured names, NXDOMAIN for the rest. */
export interface DnsResponder {
  /** `127.0.0.1:PORT`, for a resolver's servers. */
  readonly server: string;
  readonly port: number;
  /** Replaces the TXT records of a name (an empty list: the name exists without TXT). */
  setTxt(name: string, records: readonly string[]): void;
  /** The names asked so far, lowercase. */
  readonly queries: readonly string[];
  close(): Promise<void>;
}

/** Options of {@link startDnsResponder}. */
export interface DnsResponderOptions {
  /** TXT records by name. */
  readonly records?: Readonly<Record<string, readonly string[]>>;
  /** Never answer (a server that times out). */
  readonly silent?: boolean;
}

const TYPE_TXT = 16;
const CLASS_IN = 1;

function readName(message: Buffer, start: number): { name: string; end: number } {
  const labels: string[] = [];
  let offset = start;
  for (;;) {
    const size = message[offset];
    if (size === undefined || size > 63) throw new Error('Unsupported name');
    offset += 1;
    if (size === 0) break;
    labels.push(message.subarray(offset, offset + size).toString('latin1'));
    offset += size;
  }
  return { name: labels.join('.').toLowerCase(), end: offset };
}

function txtData(record: string): Buffer {
  const bytes = Buffer.from(record, 'utf8');
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < bytes.length || chunks.length === 0; offset += 255) {
    const chunk = bytes.subarray(offset, offset + 255);
    chunks.push(Buffer.from([chunk.length]), chunk);
  }
  return Buffer.concat(chunks);
}

function answer(query: Buffer, records: Map<string, readonly string[]>, asked: string[]): Buffer | undefined {
  if (query.length < 12 || query.readUInt16BE(4) !== 1) return undefined;
  const { name, end } = readName(query, 12);
  asked.push(name);
  const type = query.readUInt16BE(end);
  const question = query.subarray(12, end + 4);
  const known = records.get(name);
  const rdatas = known && type === TYPE_TXT ? known.map(txtData) : [];
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0);
  // QR, the query's opcode and RD, AA; RCODE 3 (NXDOMAIN) when the name is unknown.
  const flags = 0x8000 | (query.readUInt16BE(2) & 0x7900) | 0x0400 | (known ? 0 : 3);
  header.writeUInt16BE(flags, 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(rdatas.length, 6);
  const answers = rdatas.map((rdata) => {
    const fixed = Buffer.alloc(12);
    fixed.writeUInt16BE(0xc00c, 0); // the question's name
    fixed.writeUInt16BE(TYPE_TXT, 2);
    fixed.writeUInt16BE(CLASS_IN, 4);
    fixed.writeUInt32BE(60, 6);
    fixed.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([fixed, rdata]);
  });
  return Buffer.concat([header, question, ...answers]);
}

/** Starts a {@link DnsResponder} on a free UDP port of 127.0.0.1. */
export async function startDnsResponder(options: DnsResponderOptions = {}): Promise<DnsResponder> {
  const records = new Map<string, readonly string[]>(
    Object.entries(options.records ?? {}).map(([name, values]) => [name.toLowerCase(), values]),
  );
  const queries: string[] = [];
  const socket = createSocket('udp4');
  socket.on('message', (message: Buffer, remote: RemoteInfo) => {
    if (options.silent) return;
    let reply: Buffer | undefined;
    try {
      reply = answer(message, records, queries);
    } catch {
      return;
    }
    if (reply) socket.send(reply, remote.port, remote.address);
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => resolve());
  });
  const { port } = socket.address();
  return {
    server: `127.0.0.1:${port}`,
    port,
    queries,
    setTxt: (name, values) => {
      records.set(name.toLowerCase(), values);
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}
