import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SMTPServer, type SMTPServerAddress } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, createMemoryMailer, loadConfig } from '../src/index.js';
import { createFileMailer, createMailerFromConfig, createSmtpMailer, parseEml, readMailbox } from '../src/mail.js';

interface Received {
  from: string;
  to: string[];
  user: string | undefined;
  raw: string;
}

describe('SMTP mailer against a real SMTP server', () => {
  const received: Received[] = [];
  let server: SMTPServer;
  let port: number;
  beforeAll(async () => {
    server = new SMTPServer({
      secure: false,
      disabledCommands: ['STARTTLS'],
      allowInsecureAuth: true,
      authMethods: ['PLAIN', 'LOGIN'],
      logger: false,
      onAuth(auth, _session, callback) {
        if (auth.username === 'idt' && auth.password === 'p@ss:word') return callback(null, { user: auth.username });
        return callback(new Error('Invalid username or password'));
      },
      onRcptTo(address: SMTPServerAddress, _session, callback) {
        if (address.address.endsWith('@refused.example')) return callback(new Error('Mailbox unavailable'));
        return callback();
      },
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          received.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            user: session.user,
            raw: Buffer.concat(chunks).toString('utf8'),
          });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    port = (server.server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('delivers the message with credentials from the URL', async () => {
    const mailer = createSmtpMailer({
      url: `smtp://idt:${encodeURIComponent('p@ss:word')}@127.0.0.1:${port}`,
      from: 'idt <no-reply@idt.test>',
    });
    try {
      await mailer.send({
        to: 'Ada Lovelace <ada@example.com>',
        subject: 'Confirm your address – ✓',
        text: `Hello Ada,\n\nopen https://id.example.com/confirm?token=${'x'.repeat(120)} to confirm.\n`,
        html: '<p>Hello <b>Ada</b></p>',
        headers: { 'X-Idt-Template': 'email-confirmation' },
      });
    } finally {
      mailer.close();
    }
    expect(received).toHaveLength(1);
    const [mail] = received;
    expect(mail?.user).toBe('idt');
    expect(mail?.from).toBe('no-reply@idt.test');
    expect(mail?.to).toEqual(['ada@example.com']);
    const parsed = parseEml(mail?.raw ?? '');
    expect(parsed.from).toBe('idt <no-reply@idt.test>');
    expect(parsed.to).toBe('Ada Lovelace <ada@example.com>');
    expect(parsed.toAddresses).toEqual(['ada@example.com']);
    expect(parsed.subject).toBe('Confirm your address – ✓');
    expect(parsed.text).toBe(`Hello Ada,\n\nopen https://id.example.com/confirm?token=${'x'.repeat(120)} to confirm.`);
    expect(parsed.html).toBe('<p>Hello <b>Ada</b></p>');
    expect(parsed.headers['x-idt-template']).toBe('email-confirmation');
  });

  it('lets a message override the sender', async () => {
    const mailer = createSmtpMailer({ url: `smtp://idt:p%40ss%3Aword@127.0.0.1:${port}`, from: 'idt <no-reply@idt.test>' });
    await mailer.send({ to: 'grace@example.com', subject: 'Hi', text: 'Hi', from: 'Support <support@idt.test>' });
    const mail = received.at(-1);
    expect(mail?.from).toBe('support@idt.test');
    expect(parseEml(mail?.raw ?? '')).toMatchObject({ from: 'Support <support@idt.test>', subject: 'Hi', text: 'Hi' });
  });

  it('rejects when the server refuses the credentials or the recipient', async () => {
    const wrong = createSmtpMailer({ url: `smtp://idt:wrong@127.0.0.1:${port}`, from: 'no-reply@idt.test' });
    await expect(wrong.send({ to: 'ada@example.com', subject: 'x', text: 'x' })).rejects.toThrow(/Invalid username or password/);
    const mailer = createSmtpMailer({ url: `smtp://idt:p%40ss%3Aword@127.0.0.1:${port}`, from: 'no-reply@idt.test' });
    await expect(mailer.send({ to: 'nobody@refused.example', subject: 'x', text: 'x' })).rejects.toThrow(/Mailbox unavailable/);
  });

  it('refuses header injection before connecting', async () => {
    const mailer = createSmtpMailer({ url: `smtp://127.0.0.1:${port}`, from: 'no-reply@idt.test' });
    const before = received.length;
    await expect(mailer.send({ to: 'ada@example.com', subject: 'Hi\r\nBcc: eve@example.com', text: 'x' })).rejects.toThrow(
      TypeError,
    );
    await expect(
      mailer.send({ to: 'ada@example.com', subject: 'Hi', text: 'x', headers: { 'X-A': 'b\nBcc: e' } }),
    ).rejects.toThrow(TypeError);
    await expect(mailer.send({ to: ' ', subject: 'Hi', text: 'x' })).rejects.toThrow(/recipient/);
    expect(received.length).toBe(before);
  });
});

describe('file mailer', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'idt-mail-'));
  });
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes parseable .eml files into a created directory, logs them, and reads them back in order', async () => {
    const directory = join(dir, 'nested', 'mail');
    expect(await readMailbox(directory)).toEqual([]);
    const lines: string[] = [];
    const mailer = createFileMailer({
      directory,
      from: 'idt <no-reply@localhost>',
      logger: createLogger({ level: 'info', write: (line) => lines.push(line) }),
    });
    const link = `http://localhost:8080/v1/identity/confirm?token=${'abc123'.repeat(20)}`;
    await mailer.send({ to: 'ada@example.com', subject: 'Confirm your address', text: `Open ${link}\n` });
    await mailer.send({ to: 'Grace <GRACE@example.com>', subject: 'Grüße', text: 'Zweite Nachricht: ÄÖÜ', html: '<p>zwei</p>' });
    await mailer.send({ to: 'ada@example.com', subject: 'Second for Ada', text: 'again' });

    const files = readdirSync(directory);
    expect(files).toHaveLength(3);
    expect(files.every((name) => /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z-[0-9a-f-]{36}\.eml$/.test(name))).toBe(true);

    const mailbox = await readMailbox(directory);
    expect(mailbox.map((m) => m.subject)).toEqual(['Confirm your address', 'Grüße', 'Second for Ada']);
    expect(mailbox[0]).toMatchObject({ from: 'idt <no-reply@localhost>', to: 'ada@example.com', text: `Open ${link}` });
    expect(/https?:\/\/\S+/.exec(mailbox[0]?.text ?? '')?.[0]).toBe(link);
    expect(mailbox[1]).toMatchObject({ to: 'Grace <GRACE@example.com>', text: 'Zweite Nachricht: ÄÖÜ', html: '<p>zwei</p>' });
    expect(mailbox[0]?.html).toBeUndefined();

    expect((await readMailbox(directory, { to: 'ADA@example.com' })).map((m) => m.subject)).toEqual([
      'Confirm your address',
      'Second for Ada',
    ]);
    expect((await readMailbox(directory, { to: 'grace@example.com' })).map((m) => m.subject)).toEqual(['Grüße']);

    // A real RFC 5322 message: CRLF lines, the usual headers.
    const raw = readFileSync(mailbox[0]?.file ?? '', 'utf8');
    expect(raw).toMatch(/\r\n\r\n/);
    expect(raw.replace(/\r\n/g, '')).not.toMatch(/\n/);
    for (const header of ['From', 'To', 'Subject', 'Message-ID', 'Date', 'MIME-Version', 'Content-Type']) {
      expect(raw).toMatch(new RegExp(`^${header}: `, 'm'));
    }

    expect(lines).toHaveLength(3);
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({
      level: 'info',
      to: 'ada@example.com',
      subject: 'Confirm your address',
      file: mailbox[0]?.file,
    });
  });

  it('is what the configuration chooses without an SMTP URL', async () => {
    const config = loadConfig({ IDT_ENVIRONMENT: 'Testing', IDT_DATA_DIR: dir });
    expect(config.mail).toEqual({
      transport: 'file',
      from: 'idt <no-reply@localhost>',
      directory: `${dir}/mail`,
    });
    await createMailerFromConfig(config).send({ to: 'ada@example.com', subject: 'From config', text: 'x' });
    expect((await readMailbox(config.mail.directory)).map((m) => m.subject)).toEqual(['From config']);
    const smtp = createMailerFromConfig(loadConfig({ IDT_ENVIRONMENT: 'Testing', IDT_SMTP_URL: 'smtp://127.0.0.1:1' }));
    expect(typeof smtp.send).toBe('function');
  });
});

describe('memory mailer', () => {
  it('keeps copies of the messages sent', async () => {
    const mailer = createMemoryMailer();
    const message = { to: 'ada@example.com', subject: 'Hi', text: 'Hello', headers: { 'X-A': '1' } };
    await mailer.send(message);
    message.headers['X-A'] = '2';
    expect(mailer.messages).toEqual([{ to: 'ada@example.com', subject: 'Hi', text: 'Hello', headers: { 'X-A': '1' } }]);
    await expect(mailer.send({ to: 'ada@example.com', subject: 'a\nb', text: '' })).rejects.toThrow(TypeError);
  });
});
