import { createMemoryMailer, type MemoryMailer } from '@idt/core';
import { bearer, startTestServer, type TenantWithTokens, type TestServer, tenantWithTokens, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createNotificationHandlers } from '../src/handlers.js';
import { createKnexNotificationStore } from '../src/knex/store.js';

const INQUIRY = {
  name: 'Grace Hopper',
  email: 'grace@example.com',
  phone: '+1 555 0100',
  projectType: 'Compiler',
  budgetRange: '10k-50k',
  timeline: 'Q3',
  message: 'We need <b>a compiler</b>.',
};

describe.each(testDialects())('notifications from events on %s', (dialect) => {
  let server: TestServer;
  let mailer: MemoryMailer;
  let acme: TenantWithTokens;

  beforeAll(async () => {
    mailer = createMemoryMailer();
    server = await startTestServer({ dialect, mailer });
    acme = await tenantWithTokens(server, 'Acme');
  });
  afterAll(async () => {
    await server?.close();
  });

  /** One of the module's handlers, built over the running server's services (to redeliver an event by hand). */
  const handlerNamed = (name: string) => {
    const handler = createNotificationHandlers({
      store: createKnexNotificationStore(server.database.db),
      service: server.idt.services.notifications.service,
      mailer,
      clock: server.idt.clock,
      logger: server.idt.logger,
      baseUrl: server.url,
      emailChange: server.idt.services.identity.credentials.emailChange,
      members: server.idt.services.identity.members,
    }).find((candidate) => candidate.name === name);
    if (!handler) throw new Error(`No handler ${name}`);
    return handler;
  };
  const mailsWith = (template: string, to: string) =>
    mailer.messages.filter((message) => message.headers?.['X-Idt-Template'] === template && message.to === to);
  const changeEmail = (token: string, newEmail: string) =>
    server.fetch('/v1/identity/auth/change-email', {
      method: 'POST',
      headers: { ...bearer(token), 'content-type': 'application/json' },
      body: JSON.stringify({ newEmail }),
    });

  const titles = async (token: string) =>
    (
      (await (await server.fetch('/v1/notifications', { headers: bearer(token) })).json()) as {
        items: Array<{ title: string; type: string }>;
      }
    ).items;

  it('notifies and mails the members holding InquiriesRead of a new inquiry, except who opted out', async () => {
    const optOut = await server.fetch('/v1/notifications/preferences', {
      method: 'PUT',
      headers: bearer(acme.tokens.admin),
      body: JSON.stringify({ channel: 'email', type: 'InquirySubmitted', enabled: false }),
    });
    expect(optOut.status).toBe(204);
    const submitted = await server.fetch('/v1/inquiries', {
      method: 'POST',
      headers: bearer(acme.tokens.user),
      body: JSON.stringify(INQUIRY),
    });
    expect(submitted.ok).toBe(true);

    await vi.waitFor(
      () => {
        const to = mailer.messages
          .filter((message) => message.headers?.['X-Idt-Template'] === 'inquiry-submitted')
          .map((message) => message.to);
        expect(to.sort()).toEqual([acme.owner.email, acme.manager.email].sort());
      },
      { timeout: 10_000, interval: 25 },
    );
    const mail = mailer.messages.find((message) => message.to === acme.owner.email);
    expect(mail?.subject).toBe('New inquiry from Grace Hopper');
    expect(mail?.html).toContain('Grace Hopper (grace@example.com)');
    expect(mail?.text).toContain('/v1/inquiries/');

    // In-app: the staff, the opted-out admin included (e-mail only was turned off); not the plain member.
    await vi.waitFor(
      async () => expect((await titles(acme.tokens.owner)).map((item) => item.type)).toContain('InquirySubmitted'),
      {
        timeout: 10_000,
      },
    );
    expect((await titles(acme.tokens.admin)).map((item) => item.title)).toContain('New inquiry from Grace Hopper');
    expect((await titles(acme.tokens.user)).map((item) => item.type)).not.toContain('InquirySubmitted');
  });

  /** The envelope of an InquirySubmittedEvent delivered for the first time, from acme's user. */
  function inquirySubmitted(id: string, inquiryId: string, name: string, projectType: string) {
    return {
      id,
      type: 'InquirySubmittedEvent',
      occurredAt: new Date().toISOString(),
      attempt: 1,
      payload: {
        inquiryId,
        organizationId: acme.organization.id,
        submitterId: acme.user.id,
        name,
        email: `${name.toLowerCase()}@example.com`,
        projectType,
        submittedAt: new Date().toISOString(),
      },
    };
  }

  it('creates each notification and sends each mail once when an event is delivered twice', async () => {
    const handler = handlerNamed('notifications.inquiry-submitted');
    const envelope = inquirySubmitted(`redelivered-${dialect}`, 'inq-1', 'Twice', 'Retry');
    const before = mailer.messages.length;
    await handler.handle(envelope);
    await handler.handle({ ...envelope, attempt: 2 });
    expect(mailer.messages.length - before).toBe(2); // owner and manager, once each
    const rows = await server.database.db('notifications').where({ title: 'New inquiry from Twice' });
    expect(rows).toHaveLength(3); // owner, admin, manager
  });

  it('alerts the user in-app when the e-mail address changed', async () => {
    const handler = handlerNamed('notifications.email-changed-alert');
    const envelope = {
      id: `email-changed-${dialect}`,
      type: 'UserEmailChangedEvent',
      occurredAt: new Date().toISOString(),
      attempt: 1,
      payload: { userId: acme.user.id, oldEmail: 'old@example.com', newEmail: 'new@example.com' },
    };
    await handler.handle(envelope);
    await handler.handle(envelope);
    const alerts = (await titles(acme.tokens.user)).filter((item) => item.type === 'SecurityAlert');
    expect(alerts.map((item) => item.title)).toEqual(['Your e-mail address was changed']);
    // Personal: visible in every organization of the user, to nobody else.
    expect((await titles(acme.tokens.owner)).some((item) => item.type === 'SecurityAlert')).toBe(false);
  });

  it('creates a notification once when two deliveries of its event race, and both succeed', async () => {
    const alert = handlerNamed('notifications.email-changed-alert');
    const alerted = {
      id: `email-changed-race-${dialect}`,
      type: 'UserEmailChangedEvent',
      occurredAt: new Date().toISOString(),
      attempt: 1,
      payload: { userId: acme.owner.id, oldEmail: 'old-owner@example.com', newEmail: 'new-owner@example.com' },
    };
    // One notification (a single statement) and three (a transaction), each delivered twice at once.
    const inquiry = handlerNamed('notifications.inquiry-submitted');
    const submitted = inquirySubmitted(`inquiry-race-${dialect}`, 'inq-race', 'Racer', 'Race');
    await Promise.all([
      alert.handle(alerted),
      alert.handle({ ...alerted, attempt: 2 }),
      inquiry.handle(submitted),
      inquiry.handle({ ...submitted, attempt: 2 }),
    ]);
    const alerts = (await titles(acme.tokens.owner)).filter((item) => item.type === 'SecurityAlert');
    expect(alerts.map((item) => item.title)).toEqual(['Your e-mail address was changed']);
    expect(await server.database.db('notifications').where({ title: 'New inquiry from Racer' })).toHaveLength(3);
  });

  it('mails the confirmation link to the new address and the notice to the old one, in plain text and HTML', async () => {
    const { user } = acme;
    const newEmail = `moved-${dialect}@example.com`;
    const optOut = await server.fetch('/v1/notifications/preferences', {
      method: 'PUT',
      headers: bearer(acme.tokens.user),
      body: JSON.stringify({ channel: 'email', enabled: false }),
    });
    expect(optOut.status).toBe(204);
    expect((await changeEmail(acme.tokens.user, newEmail)).status).toBe(200);
    await vi.waitFor(() => expect(mailsWith('email-change-confirmation', newEmail)).toHaveLength(1), {
      timeout: 10_000,
      interval: 25,
    });
    const [confirmation] = mailsWith('email-change-confirmation', newEmail);
    const link = /https?:\/\/\S+confirm-email-change\S+/.exec(confirmation?.text ?? '')?.[0] as string;
    expect(link.startsWith(`${server.url}/v1/identity/auth/confirm-email-change?`)).toBe(true);
    expect(confirmation?.subject).toBe('Confirm your new e-mail address');
    // The HTML part carries the same link, escaped.
    expect(confirmation?.html).toContain(`href="${link.replaceAll('&', '&amp;')}"`);

    // Redelivering the request event mails nothing twice.
    const [requested] = await server.database.db('core_outbox_events').where({ type: 'UserEmailChangeRequestedEvent' });
    const envelope = { id: requested.id, type: requested.type, occurredAt: new Date().toISOString(), attempt: 2 };
    await handlerNamed('notifications.mail-email-change-confirmation').handle({
      ...envelope,
      payload: JSON.parse(requested.payload),
    });
    expect(mailsWith('email-change-confirmation', newEmail)).toHaveLength(1);

    expect((await fetch(link)).status).toBe(200);
    await vi.waitFor(() => expect(mailsWith('email-changed-notice', user.email)).toHaveLength(1), {
      timeout: 10_000,
      interval: 25,
    });
    const [notice] = mailsWith('email-changed-notice', user.email);
    expect(notice?.text).toContain(`from ${user.email} to ${newEmail}`);
    expect(notice?.html).toContain(`to ${newEmail}`);
    // Both mails are transactional: the opt-out above silenced neither. The in-app alert is there too.
    await vi.waitFor(
      async () => expect((await titles(acme.tokens.user)).map((item) => item.title)).toContain('Your e-mail address was changed'),
      { timeout: 10_000, interval: 25 },
    );
  });

  it('mails no link for a change that was replaced or confirmed before the event was handled', async () => {
    const first = `first-${dialect}@example.com`;
    const second = `second-${dialect}@example.com`;
    expect((await changeEmail(acme.tokens.owner, first)).status).toBe(200);
    expect((await changeEmail(acme.tokens.owner, second)).status).toBe(200);
    await vi.waitFor(() => expect(mailsWith('email-change-confirmation', second)).toHaveLength(1), {
      timeout: 10_000,
      interval: 25,
    });
    const events = await server.database.db('core_outbox_events').where({ type: 'UserEmailChangeRequestedEvent' });
    const stale = events.find((row) => JSON.parse(row.payload).newEmail === first);
    const before = mailer.messages.length;
    // Handled again as if it were delivered late: the first change was replaced, so nothing goes out.
    await handlerNamed('notifications.mail-email-change-confirmation').handle({
      id: `late-${stale.id}`,
      type: stale.type,
      occurredAt: new Date().toISOString(),
      attempt: 1,
      payload: JSON.parse(stale.payload),
    });
    expect(mailer.messages.length).toBe(before);
    expect(mailsWith('email-change-confirmation', first).length).toBeLessThanOrEqual(1);
  });
});
