import { describe, expect, it } from 'vitest';
import { lazyTransport, NODEMAILER_MISSING, NodemailerMissingError } from './nodemailer-message.js';

describe('lazyTransport', () => {
  it('says nodemailer is not installed, and what to do, when the first message finds it missing', async () => {
    // A specifier no installation has: the real "cannot find package" error of the runtime.
    const transport = lazyTransport({ streamTransport: true }, () => import('nodemailer-is-not-installed-here' as string));
    const failure = await transport.get().catch((error: unknown) => error);
    expect(failure).not.toBeInstanceOf(NodemailerMissingError);

    const missing = lazyTransport({ streamTransport: true }, async () => {
      throw Object.assign(new Error("Cannot find package 'nodemailer' imported from /srv/app/node_modules/@idt/core/dist/x.js"), {
        code: 'ERR_MODULE_NOT_FOUND',
      });
    });
    const error = await missing.get().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NodemailerMissingError);
    expect(error).toMatchObject({ code: NODEMAILER_MISSING, message: expect.stringContaining('npm install nodemailer') });
  });

  it('loads nodemailer once, on first use, when it is installed', async () => {
    let loads = 0;
    const transport = lazyTransport({ streamTransport: true, buffer: true }, () => {
      loads += 1;
      return import('nodemailer');
    });
    expect(loads).toBe(0);
    const [first, second] = await Promise.all([transport.get(), transport.get()]);
    expect(first).toBe(second);
    expect(loads).toBe(1);
    const info = await first.sendMail({ from: 'a@example.com', to: 'b@example.com', subject: 'Hi', text: 'Hello' });
    expect(String(info.message)).toContain('Subject: Hi');
    transport.close();
  });
});
