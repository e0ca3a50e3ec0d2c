import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { describeListenFailure, listenFailureLines } from './listen-failure.js';

/** The error a second listener on a taken port gets from node itself. */
async function portInUse(): Promise<{ error: unknown; port: number; close(): Promise<void> }> {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  const port = (taken.address() as { port: number }).port;
  const second = createServer();
  const error = await new Promise((resolve) => {
    second.once('error', resolve);
    second.listen(port, '127.0.0.1');
  });
  return { error, port, close: () => new Promise((resolve) => taken.close(() => resolve())) };
}

describe('describeListenFailure', () => {
  it('names a port in use and the way to choose another, in the words of the process that failed', async () => {
    const { error, port, close } = await portInUse();
    try {
      const failure = describeListenFailure(error, { port, host: '127.0.0.1', anotherPort: (p) => `PORT=${p} npm start` });
      expect(failure).toEqual({
        code: 'Server.PortInUse',
        detail: `Port ${port} on 127.0.0.1 is already in use by another process.`,
        fix: 'Stop the process that listens there, or choose another port: PORT=8080 npm start; PORT=0 npm start picks a free one.',
      });
      expect(listenFailureLines(failure ?? { code: 'Server.PortInUse', detail: '', fix: '' })).toEqual([
        `error: Port ${port} on 127.0.0.1 is already in use by another process. (Server.PortInUse)`,
        '  Stop the process that listens there, or choose another port: PORT=8080 npm start; PORT=0 npm start picks a free one.',
      ]);
    } finally {
      await close();
    }
  });

  it('describes a privileged port and an address of another machine; nothing else', () => {
    const forbidden = describeListenFailure(Object.assign(new Error('listen EACCES'), { code: 'EACCES' }), {
      port: 80,
      host: '0.0.0.0',
    });
    expect(forbidden).toMatchObject({ code: 'Server.PortForbidden', fix: 'Use a port above 1023: PORT=8080.' });
    const elsewhere = describeListenFailure(Object.assign(new Error('listen EADDRNOTAVAIL'), { code: 'EADDRNOTAVAIL' }), {
      port: 8080,
      host: '10.9.9.9',
    });
    expect(elsewhere).toMatchObject({ code: 'Server.HostUnavailable', detail: '10.9.9.9 is not an address of this machine.' });
    expect(describeListenFailure(new Error('boom'), { port: 8080, host: '127.0.0.1' })).toBeUndefined();
    expect(describeListenFailure(undefined, { port: 8080, host: '127.0.0.1' })).toBeUndefined();
  });
});
