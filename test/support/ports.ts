import { createServer } from 'node:net';

/**
 * A loopback port free right now, for a server whose address must be known
 * before it starts (a redirect URI to register, a process to restart on the
 * same address).
 */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
