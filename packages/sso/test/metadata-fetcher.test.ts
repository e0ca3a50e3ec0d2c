import { ProblemError } from '@idt/problem';
import { tableResolver } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetadataFetcher } from '../src/index.js';
import { type MetadataServer, startMetadataServer } from './support/metadata-server.js';

async function refusal(promise: Promise<unknown>): Promise<{ code: string; detail: string }> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ProblemError);
    return { code: (error as ProblemError).code, detail: (error as ProblemError).detail };
  }
  throw new Error('The fetch was not refused');
}

describe('createMetadataFetcher', () => {
  let server: MetadataServer;

  beforeAll(async () => {
    server = await startMetadataServer();
    server.publish('/metadata', '<EntityDescriptor/>');
  });

  afterAll(async () => {
    await server?.close();
  });

  it('reads a document from a private host only where private hosts are allowed', async () => {
    expect(await createMetadataFetcher({ allowPrivateHosts: true })(`${server.origin}/metadata`)).toBe('<EntityDescriptor/>');
    const guarded = createMetadataFetcher({ allowPrivateHosts: false });
    expect(await refusal(guarded(`${server.origin}/metadata`))).toMatchObject({ code: 'Sso.InvalidConnection' });
    expect(await refusal(guarded('https://127.0.0.1/metadata'))).toMatchObject({ code: 'Sso.MetadataUnreachable' });
    expect(await refusal(guarded('https://169.254.169.254/metadata'))).toMatchObject({ code: 'Sso.MetadataUnreachable' });
    expect(await refusal(guarded('https://user:pw@idp.example/metadata'))).toMatchObject({ code: 'Sso.InvalidConnection' });
  });

  it('judges the addresses a host name resolves to', async () => {
    const { resolve } = tableResolver({ 'idp.internal.example': ['10.0.0.8'] });
    const refused = await refusal(
      createMetadataFetcher({ allowPrivateHosts: false, resolve })('https://idp.internal.example/metadata'),
    );
    expect(refused).toMatchObject({ code: 'Sso.MetadataUnreachable' });
    expect(refused.detail).toContain('private');
  });

  it('gives up at the deadline and the size limit', async () => {
    server.publish('/big', 'x'.repeat(2_000));
    const small = createMetadataFetcher({ allowPrivateHosts: true, maxBytes: 1_000 });
    expect((await refusal(small(`${server.origin}/big`))).detail).toContain('larger than 1000 bytes');
    const sockets: Array<import('node:net').Socket> = [];
    const silent = await import('node:net').then(({ createServer }) => createServer((socket) => void sockets.push(socket)));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    const hasty = createMetadataFetcher({ allowPrivateHosts: true, timeoutMs: 200 });
    expect((await refusal(hasty(`http://127.0.0.1:${port}/metadata`))).detail).toContain('within 200 ms');
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });
});
