import { defineEventHandler, type EventEnvelope, newId } from '@idt/core';
import { INQUIRY_STATUSES, type InquiryStatus, InquirySubmittedEvent } from '@idt/inquiries';
import {
  bootstrapAdmin,
  caller,
  createTestIdt,
  discover,
  expectJson,
  expectProblem,
  mintAccessToken,
  mintServiceToken,
  outboxEvents,
  registerClient,
  seedMembership,
  seedUser,
  seedWorld,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import * as oidcClient from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const INQUIRY_KEYS = [
  'budgetRange',
  'company',
  'createdAt',
  'email',
  'id',
  'message',
  'name',
  'phone',
  'projectType',
  'status',
  'submitterId',
  'timeline',
  'updatedAt',
];

/** A valid inquiry body; override fields per test. */
function inquiry(overrides: Record<string, unknown> = {}) {
  return {
    name: 'Ada Lovelace',
    email: 'ada@example.com',
    phone: '+44 20 7946 0000',
    company: 'Analytical Engines Ltd',
    projectType: 'Web application',
    budgetRange: '10k-50k',
    timeline: '3 months',
    message: 'We would like a quote.\nThanks!',
    ...overrides,
  };
}

describe.each(testDialects())('inquiries over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: Awaited<ReturnType<typeof seedWorld>>;
  /** Another plain user of tenant A: a stranger to the user's inquiries. */
  let strangerToken: string;
  /** Service accounts of tenant A: write only, and read + write. */
  let intakeToken: string;
  let deskToken: string;
  const delivered: Array<EventEnvelope<Record<string, unknown>>> = [];

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    call = caller(server);
    world = await seedWorld(server);
    const stranger = await seedUser(server.database.db, { firstName: 'Sam', lastName: 'Stranger' });
    await seedMembership(server.database.db, { userId: stranger.id, organizationId: world.a.organization.id, roles: ['user'] });
    strangerToken = await mintAccessToken(server, { sub: stranger.id, org_id: world.a.organization.id });
    intakeToken = await mintServiceToken(server, {
      clientId: 'sa-alpha-intake',
      organizationId: world.a.organization.id,
      scope: 'inquiries.write',
    });
    deskToken = await mintServiceToken(server, {
      clientId: 'sa-alpha-desk',
      organizationId: world.a.organization.id,
      scope: 'inquiries.read inquiries.write',
    });
    server.idt.infrastructure.events.subscribe(
      defineEventHandler({
        name: 'test.record-inquiries',
        module: 'test',
        event: InquirySubmittedEvent,
        handle: async (envelope) => void delivered.push(envelope),
      }),
    );
  });
  afterAll(async () => {
    await server.close();
  });

  async function submit(token: string, overrides: Record<string, unknown> = {}) {
    return expectJson(await call('POST', '/v1/inquiries', { token, body: inquiry(overrides) }));
  }

  async function statusOf(id: string): Promise<string> {
    const row = await server.database.db('inquiries').where({ id }).first('status');
    return row.status;
  }

  describe('POST /v1/inquiries', () => {
    it('answers 200 with the inquiry; the submitter comes from the token, never the body', async () => {
      const created = await submit(world.a.tokens.user, { submitterId: world.a.admin.id, status: 'Closed', id: newId() });
      expect(Object.keys(created).sort()).toEqual(INQUIRY_KEYS);
      expect(created).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        ...inquiry(),
        message: 'We would like a quote.\nThanks!',
        submitterId: world.a.user.id,
        status: 'New',
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        updatedAt: created.createdAt,
      });
      const row = await server.database.db('inquiries').where({ id: created.id }).first();
      expect(row).toMatchObject({ organization_id: world.a.organization.id, submitter_id: world.a.user.id, status: 'New' });
    });

    it('stores the submitter’s IP address and never returns it', async () => {
      const created = await submit(world.a.tokens.user, { company: '' });
      expect(created.company).toBeNull();
      const row = await server.database.db('inquiries').where({ id: created.id }).first();
      expect(row.submitter_ip).toBe('127.0.0.1');
      // Without a trusted proxy, X-Forwarded-For is ignored.
      const forwarded = await server.fetch('/v1/inquiries', {
        method: 'POST',
        headers: {
          authorization: `Bearer ${world.a.tokens.user}`,
          'content-type': 'application/json',
          'x-forwarded-for': '203.0.113.9',
        },
        body: JSON.stringify(inquiry()),
      });
      const body = await expectJson(forwarded);
      expect((await server.database.db('inquiries').where({ id: body.id }).first()).submitter_ip).toBe('127.0.0.1');
      for (const response of [
        await call('GET', `/v1/inquiries/${created.id}`, { token: world.a.tokens.admin }),
        await call('GET', '/v1/inquiries', { token: world.a.tokens.admin }),
        await call('GET', '/v1/inquiries/submitted', { token: world.a.tokens.user }),
      ]) {
        const text = await response.text();
        expect(response.status).toBe(200);
        expect(text).not.toContain('127.0.0.1');
        const parsed = JSON.parse(text);
        for (const entry of Array.isArray(parsed) ? parsed : [parsed]) {
          expect(Object.keys(entry).sort()).toEqual(INQUIRY_KEYS);
        }
      }
    });

    it('writes InquirySubmittedEvent through the outbox and delivers it to handlers', async () => {
      const created = await submit(world.a.tokens.user, { name: 'Event Person', email: 'event@example.com' });
      const payloads = await outboxEvents(server.database.db, 'InquirySubmittedEvent');
      expect(payloads).toContainEqual({
        inquiryId: created.id,
        organizationId: world.a.organization.id,
        submitterId: world.a.user.id,
        name: 'Event Person',
        email: 'event@example.com',
        projectType: 'Web application',
        submittedAt: created.createdAt,
      });
      await server.idt.infrastructure.events.dispatchPending();
      const envelope = delivered.find((entry) => entry.payload.inquiryId === created.id);
      expect(envelope).toMatchObject({ type: 'InquirySubmittedEvent', payload: { submitterId: world.a.user.id } });
      const delivery = await server.database
        .db('core_outbox_deliveries')
        .where({ event_id: envelope?.id, handler: 'test.record-inquiries' })
        .first();
      expect(delivery.status).toBe('delivered');
    });

    it('records a null submitter for a service account, whose own list stays empty', async () => {
      const created = await submit(intakeToken, { submitterId: world.a.user.id });
      expect(created.submitterId).toBeNull();
      expect(
        (await outboxEvents(server.database.db, 'InquirySubmittedEvent')).find((p) => p.inquiryId === created.id),
      ).toMatchObject({ submitterId: null });
      expect(await expectJson(await call('GET', '/v1/inquiries/submitted', { token: intakeToken }))).toEqual([]);
      // Without InquiriesRead a service account sees no inquiry, not even the one it sent.
      await expectProblem(await call('GET', `/v1/inquiries/${created.id}`, { token: intakeToken }), 404, 'Inquiry.NotFound');
      expect(await expectJson(await call('GET', `/v1/inquiries/${created.id}`, { token: deskToken }))).toMatchObject({
        id: created.id,
        submitterId: null,
      });
    });

    it('validates every field with the limits of SPEC 8.2, keyed by field, and stores nothing', async () => {
      const before = await server.database.db('inquiries').count({ n: '*' });
      const fieldsOf = async (body: unknown) => {
        const problem = await expectProblem(
          await call('POST', '/v1/inquiries', { token: world.a.tokens.user, body }),
          400,
          'Validation.Failed',
        );
        return Object.keys(problem.errors).sort();
      };
      expect(await fieldsOf({})).toEqual(['budgetRange', 'email', 'message', 'name', 'phone', 'projectType', 'timeline']);
      expect(await fieldsOf(inquiry({ name: 'n'.repeat(201) }))).toEqual(['name']);
      expect(await fieldsOf(inquiry({ name: '   ' }))).toEqual(['name']);
      expect(await fieldsOf(inquiry({ email: 'not-an-address' }))).toEqual(['email']);
      expect(await fieldsOf(inquiry({ email: `${'a'.repeat(245)}@example.com` }))).toEqual(['email']);
      expect(await fieldsOf(inquiry({ message: 'm'.repeat(5001) }))).toEqual(['message']);
      expect(await fieldsOf(inquiry({ phone: '1'.repeat(51) }))).toEqual(['phone']);
      expect(await fieldsOf(inquiry({ company: 'c'.repeat(201) }))).toEqual(['company']);
      expect(await fieldsOf(inquiry({ projectType: '', budgetRange: null, timeline: 42 }))).toEqual([
        'budgetRange',
        'projectType',
        'timeline',
      ]);
      expect(await fieldsOf(inquiry({ name: 'Ada\u0000' }))).toEqual(['name']);
      expect(await server.database.db('inquiries').count({ n: '*' })).toEqual(before);
      // The limits themselves are accepted.
      const longest = await submit(world.a.tokens.user, {
        name: 'n'.repeat(200),
        email: `${'a'.repeat(242)}@example.com`,
        message: 'm'.repeat(5000),
        phone: '1'.repeat(50),
        company: undefined,
      });
      expect(longest).toMatchObject({ name: 'n'.repeat(200), company: null });
      expect(longest.email).toHaveLength(254);
    });

    it('needs a credential, InquiriesWrite and an organization', async () => {
      await expectProblem(await call('POST', '/v1/inquiries', { body: inquiry() }), 401, 'Auth.Unauthenticated');
      await expectProblem(
        await call('POST', '/v1/inquiries', { token: world.a.tokens.manager, body: inquiry() }),
        403,
        'Auth.Forbidden',
      );
      await expectProblem(
        await call('POST', '/v1/inquiries', { token: world.outsiderToken, body: inquiry() }),
        403,
        'Tenant.Required',
      );
    });
  });

  describe('reading inquiries', () => {
    let own: { id: string };
    let adminsOwn: { id: string };

    beforeAll(async () => {
      own = await submit(world.a.tokens.user, { name: 'Owner Inquiry' });
      adminsOwn = await submit(world.a.tokens.admin, { name: 'Admin Inquiry' });
    });

    it('shows a caller without InquiriesRead only its own inquiries; everyone else gets 404', async () => {
      expect(await expectJson(await call('GET', `/v1/inquiries/${own.id}`, { token: world.a.tokens.user }))).toMatchObject({
        id: own.id,
        name: 'Owner Inquiry',
      });
      await expectProblem(await call('GET', `/v1/inquiries/${own.id}`, { token: strangerToken }), 404, 'Inquiry.NotFound');
      await expectProblem(
        await call('GET', `/v1/inquiries/${adminsOwn.id}`, { token: world.a.tokens.user }),
        404,
        'Inquiry.NotFound',
      );
      // Staff with InquiriesRead (a manager) see every inquiry of the organization.
      expect((await call('GET', `/v1/inquiries/${own.id}`, { token: world.a.tokens.manager })).status).toBe(200);
      expect((await call('GET', `/v1/inquiries/${adminsOwn.id}`, { token: world.a.tokens.manager })).status).toBe(200);
      await expectProblem(
        await call('GET', `/v1/inquiries/${newId()}`, { token: world.a.tokens.admin }),
        404,
        'Inquiry.NotFound',
      );
      await expectProblem(
        await call('GET', '/v1/inquiries/not-a-guid', { token: world.a.tokens.admin }),
        404,
        'Inquiry.NotFound',
      );
      await expectProblem(await call('GET', `/v1/inquiries/${own.id}`), 401, 'Auth.Unauthenticated');
    });

    it('lists the caller’s own inquiries at /v1/inquiries/submitted, newest first', async () => {
      const mine = await expectJson(await call('GET', '/v1/inquiries/submitted', { token: world.a.tokens.user }));
      expect(mine.length).toBeGreaterThan(1);
      expect(mine.every((entry: { submitterId: string }) => entry.submitterId === world.a.user.id)).toBe(true);
      expect(mine.map((entry: { id: string }) => entry.id)).toContain(own.id);
      expect(mine.map((entry: { id: string }) => entry.id)).not.toContain(adminsOwn.id);
      const created = mine.map((entry: { createdAt: string }) => entry.createdAt);
      expect([...created].sort().reverse()).toEqual(created);
      expect(await expectJson(await call('GET', '/v1/inquiries/submitted', { token: strangerToken }))).toEqual([]);
    });

    it('lists every inquiry to InquiriesRead callers, filtered by status case-insensitively', async () => {
      const everything = await expectJson(await call('GET', '/v1/inquiries', { token: world.a.tokens.manager }));
      expect(everything.map((entry: { id: string }) => entry.id)).toEqual(expect.arrayContaining([own.id, adminsOwn.id]));
      const created = everything.map((entry: { createdAt: string }) => entry.createdAt);
      expect([...created].sort().reverse()).toEqual(created);
      await expectJson(
        await call('PATCH', `/v1/inquiries/${own.id}/status`, { token: world.a.tokens.admin, body: { newStatus: 'Reviewed' } }),
      );
      for (const status of ['reviewed', 'REVIEWED', 'Reviewed', ' rEvIeWeD ']) {
        const reviewed = await expectJson(
          await call('GET', `/v1/inquiries?status=${encodeURIComponent(status)}`, { token: world.a.tokens.admin }),
        );
        expect(reviewed.map((entry: { id: string }) => entry.id)).toContain(own.id);
        expect(reviewed.every((entry: { status: string }) => entry.status === 'Reviewed')).toBe(true);
      }
      const fresh = await expectJson(await call('GET', '/v1/inquiries?status=new', { token: world.a.tokens.admin }));
      expect(fresh.map((entry: { id: string }) => entry.id)).not.toContain(own.id);
      expect(fresh.every((entry: { status: string }) => entry.status === 'New')).toBe(true);
      // Unparsable values are ignored: the whole list.
      for (const query of ['?status=Archived', '?status=', '?status=1', '?status=new&status=closed']) {
        const all = await expectJson(await call('GET', `/v1/inquiries${query}`, { token: world.a.tokens.admin }));
        if (query === '?status=new&status=closed') {
          expect(all.every((entry: { status: string }) => entry.status === 'New')).toBe(true);
        } else {
          expect(all).toHaveLength(everything.length);
        }
      }
      await expectProblem(await call('GET', '/v1/inquiries', { token: world.a.tokens.user }), 403, 'Auth.Forbidden');
      await expectProblem(await call('GET', '/v1/inquiries', { token: intakeToken }), 403, 'Auth.Forbidden');
      await expectProblem(await call('GET', '/v1/inquiries'), 401, 'Auth.Unauthenticated');
      await expectProblem(await call('GET', '/v1/inquiries', { token: world.outsiderToken }), 403, 'Tenant.Required');
    });
  });

  describe('PATCH /v1/inquiries/{id}/status', () => {
    const moves = (from: InquiryStatus) => INQUIRY_STATUSES.slice(1, INQUIRY_STATUSES.indexOf(from) + 1);

    /** An inquiry walked to `status` through the allowed moves. */
    async function inquiryIn(status: InquiryStatus): Promise<string> {
      const created = await submit(world.a.tokens.user);
      for (const step of moves(status)) {
        await expectJson(
          await call('PATCH', `/v1/inquiries/${created.id}/status`, { token: world.a.tokens.admin, body: { newStatus: step } }),
        );
      }
      expect(await statusOf(created.id)).toBe(status);
      return created.id;
    }

    const pairs = INQUIRY_STATUSES.flatMap((from) => INQUIRY_STATUSES.map((to) => [from, to] as const));
    it.each(pairs)('%s → %s', async (from, to) => {
      const id = await inquiryIn(from);
      const allowed = INQUIRY_STATUSES.indexOf(to) === INQUIRY_STATUSES.indexOf(from) + 1;
      const response = await call('PATCH', `/v1/inquiries/${id}/status`, {
        token: world.a.tokens.admin,
        body: { newStatus: to },
      });
      if (allowed) {
        const updated = await expectJson(response);
        expect(updated).toMatchObject({ id, status: to });
        expect(updated.updatedAt >= updated.createdAt).toBe(true);
        expect(await statusOf(id)).toBe(to);
      } else {
        const problem = await expectProblem(response, 422, 'Inquiries.InvalidStatusTransition');
        expect(problem.detail).toContain(from);
        expect(await statusOf(id)).toBe(from);
      }
    });

    it('parses newStatus case-insensitively and refuses unknown values with 400', async () => {
      const id = await inquiryIn('New');
      const first = await expectJson(
        await call('PATCH', `/v1/inquiries/${id}/status`, { token: world.a.tokens.admin, body: { newStatus: 'reviewed' } }),
      );
      expect(first.status).toBe('Reviewed');
      expect(first.updatedAt > first.createdAt || first.updatedAt === first.createdAt).toBe(true);
      expect(
        (
          await expectJson(
            await call('PATCH', `/v1/inquiries/${id}/status`, {
              token: world.a.tokens.admin,
              body: { newStatus: ' CONTACTED ' },
            }),
          )
        ).status,
      ).toBe('Contacted');
      for (const body of [{ newStatus: 'Archived' }, { newStatus: '' }, { newStatus: 3 }, {}, { status: 'Closed' }]) {
        const problem = await expectProblem(
          await call('PATCH', `/v1/inquiries/${id}/status`, { token: world.a.tokens.admin, body }),
          400,
          'Validation.Failed',
        );
        expect(Object.keys(problem.errors)).toEqual(['newStatus']);
      }
      expect(await statusOf(id)).toBe('Contacted');
    });

    it('lets exactly one of two concurrent identical moves win', async () => {
      const id = await inquiryIn('New');
      const responses = await Promise.all(
        [1, 2].map(() =>
          call('PATCH', `/v1/inquiries/${id}/status`, { token: world.a.tokens.admin, body: { newStatus: 'Reviewed' } }),
        ),
      );
      expect(responses.map((response) => response.status).sort()).toEqual([200, 422]);
      expect(await statusOf(id)).toBe('Reviewed');
    });

    it('needs InquiriesWrite, and without InquiriesRead only works on your own inquiry', async () => {
      const own = await submit(world.a.tokens.user);
      const patch = (token: string | undefined, id = own.id) =>
        call('PATCH', `/v1/inquiries/${id}/status`, { ...(token ? { token } : {}), body: { newStatus: 'Reviewed' } });
      await expectProblem(await patch(undefined), 401, 'Auth.Unauthenticated');
      await expectProblem(await patch(world.a.tokens.manager), 403, 'Auth.Forbidden');
      await expectProblem(await patch(strangerToken), 404, 'Inquiry.NotFound');
      await expectProblem(await patch(world.a.tokens.admin, newId()), 404, 'Inquiry.NotFound');
      expect(await statusOf(own.id)).toBe('New');
      expect((await expectJson(await patch(world.a.tokens.user))).status).toBe('Reviewed');
    });
  });

  describe('comments', () => {
    let target: { id: string };

    beforeAll(async () => {
      target = await submit(world.a.tokens.user, { name: 'Commented' });
    });

    const comments = (token: string | undefined, id = target.id) =>
      call('GET', `/v1/inquiries/${id}/comments`, token ? { token } : {});
    const post = (token: string | undefined, body: unknown, id = target.id) =>
      call('POST', `/v1/inquiries/${id}/comments`, { ...(token ? { token } : {}), body });

    it('answers 201 with Location and {id}; the author comes from the token', async () => {
      const response = await post(world.a.tokens.user, {
        content: '  When can we talk?  ',
        isInternal: false,
        authorId: 'forged',
      });
      const body = await expectJson(response, 201);
      expect(body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
      expect(response.headers.get('location')).toBe(`/v1/inquiries/${target.id}/comments/${body.id}`);
      const fetched = await expectJson(
        await call('GET', response.headers.get('location') as string, { token: world.a.tokens.user }),
      );
      expect(fetched).toEqual({
        id: body.id,
        inquiryId: target.id,
        authorId: world.a.user.id,
        authorName: 'Uma User',
        content: 'When can we talk?',
        isInternal: false,
        createdAt: expect.stringMatching(/Z$/),
      });
      // isInternal defaults to false.
      const plain = await expectJson(await post(world.a.tokens.admin, { content: 'Tomorrow at ten.' }), 201);
      const row = await server.database.db('inquiries_comments').where({ id: plain.id }).first();
      expect(row).toMatchObject({
        author_id: world.a.admin.id,
        author_name: 'Adam Admin',
        organization_id: world.a.organization.id,
      });
      expect(Boolean(row.is_internal)).toBe(false);
    });

    it('shows internal comments to staff only: staff see all, the owner the public ones, a stranger nothing', async () => {
      const internal = await expectJson(
        await post(world.a.tokens.admin, { content: 'Budget looks thin.', isInternal: true }),
        201,
      );
      const staffView = await expectJson(await comments(world.a.tokens.manager));
      expect(staffView.map((comment: { id: string }) => comment.id)).toContain(internal.id);
      expect(staffView.find((comment: { id: string }) => comment.id === internal.id)).toMatchObject({ isInternal: true });
      const created = staffView.map((comment: { createdAt: string }) => comment.createdAt);
      expect([...created].sort()).toEqual(created);
      const ownerView = await expectJson(await comments(world.a.tokens.user));
      expect(ownerView.length).toBe(staffView.length - staffView.filter((c: { isInternal: boolean }) => c.isInternal).length);
      expect(ownerView.every((comment: { isInternal: boolean }) => comment.isInternal === false)).toBe(true);
      await expectProblem(
        await call('GET', `/v1/inquiries/${target.id}/comments/${internal.id}`, { token: world.a.tokens.user }),
        404,
        'Inquiry.CommentNotFound',
      );
      expect(
        (await call('GET', `/v1/inquiries/${target.id}/comments/${internal.id}`, { token: world.a.tokens.manager })).status,
      ).toBe(200);
      await expectProblem(await comments(strangerToken), 404, 'Inquiry.NotFound');
      await expectProblem(await post(strangerToken, { content: 'Hello?' }), 404, 'Inquiry.NotFound');
      await expectProblem(await comments(undefined), 401, 'Auth.Unauthenticated');
    });

    it('lets only InquiriesRead callers write internal comments, and needs InquiriesWrite to comment', async () => {
      await expectProblem(await post(world.a.tokens.user, { content: 'Secret?', isInternal: true }), 403, 'Auth.Forbidden');
      await expectProblem(await post(world.a.tokens.manager, { content: 'No write permission' }), 403, 'Auth.Forbidden');
      await expectProblem(await post(undefined, { content: 'Anyone?' }), 401, 'Auth.Unauthenticated');
      const rows = await server.database.db('inquiries_comments').where({ inquiry_id: target.id });
      expect(rows.map((row: { content: string }) => row.content)).not.toContain('Secret?');
    });

    it('takes a service account’s client id as author id and name', async () => {
      const created = await expectJson(await post(deskToken, { content: 'Routed to sales.', isInternal: true }), 201);
      const row = await server.database.db('inquiries_comments').where({ id: created.id }).first();
      expect(row).toMatchObject({ author_id: 'sa-alpha-desk', author_name: 'sa-alpha-desk' });
    });

    it('answers 404 Inquiry.NotFound for a missing inquiry and validates the comment', async () => {
      await expectProblem(await post(world.a.tokens.admin, { content: 'x' }, newId()), 404, 'Inquiry.NotFound');
      await expectProblem(await comments(world.a.tokens.admin, newId()), 404, 'Inquiry.NotFound');
      await expectProblem(await comments(world.a.tokens.admin, 'nope'), 404, 'Inquiry.NotFound');
      const keysOf = async (body: unknown) =>
        Object.keys((await expectProblem(await post(world.a.tokens.admin, body), 400, 'Validation.Failed')).errors).sort();
      expect(await keysOf({})).toEqual(['content']);
      expect(await keysOf({ content: '   ' })).toEqual(['content']);
      expect(await keysOf({ content: 'c'.repeat(5001) })).toEqual(['content']);
      expect(await keysOf({ content: 'ok', isInternal: 'yes' })).toEqual(['isInternal']);
      expect((await post(world.a.tokens.admin, { content: 'c'.repeat(5000) })).status).toBe(201);
    });
  });

  describe('tenant isolation', () => {
    it('hides every inquiry of organization A from organization B and leaves it unchanged', async () => {
      const target = await submit(world.a.tokens.user, { name: 'Alpha only' });
      await expectJson(
        await call('POST', `/v1/inquiries/${target.id}/comments`, { token: world.a.tokens.admin, body: { content: 'A' } }),
        201,
      );
      const b = world.b.tokens.admin;
      await expectProblem(await call('GET', `/v1/inquiries/${target.id}`, { token: b }), 404, 'Inquiry.NotFound');
      await expectProblem(
        await call('PATCH', `/v1/inquiries/${target.id}/status`, { token: b, body: { newStatus: 'Reviewed' } }),
        404,
        'Inquiry.NotFound',
      );
      await expectProblem(await call('GET', `/v1/inquiries/${target.id}/comments`, { token: b }), 404, 'Inquiry.NotFound');
      await expectProblem(
        await call('POST', `/v1/inquiries/${target.id}/comments`, { token: b, body: { content: 'B was here' } }),
        404,
        'Inquiry.NotFound',
      );
      const listed = await expectJson(await call('GET', '/v1/inquiries', { token: b }));
      expect(listed.map((entry: { id: string }) => entry.id)).not.toContain(target.id);
      expect(await expectJson(await call('GET', '/v1/inquiries/submitted', { token: world.b.tokens.user }))).toEqual([]);
      // An X-Tenant-Id naming A does not help a member of B.
      const crossed = await server.fetch(`/v1/inquiries/${target.id}`, {
        headers: { authorization: `Bearer ${b}`, 'x-tenant-id': world.a.organization.id },
      });
      expect([403, 404]).toContain(crossed.status);
      expect(await statusOf(target.id)).toBe('New');
      const stored = await server.database.db('inquiries_comments').where({ inquiry_id: target.id });
      expect(stored.map((row: { content: string }) => row.content)).toEqual(['A']);
      // B's own inquiries stay in B.
      const own = await submit(world.b.tokens.user, { name: 'Beta only' });
      await expectProblem(await call('GET', `/v1/inquiries/${own.id}`, { token: world.a.tokens.admin }), 404, 'Inquiry.NotFound');
      const listedA = await expectJson(await call('GET', '/v1/inquiries', { token: world.a.tokens.admin }));
      expect(listedA.map((entry: { id: string }) => entry.id)).not.toContain(own.id);
    });
  });

  it('documents every inquiries route in /openapi/v1.json', async () => {
    const document = (await (await server.fetch('/openapi/v1.json')).json()) as {
      paths: Record<
        string,
        Record<string, { operationId: string; responses: Record<string, unknown>; 'x-permissions'?: string[] }>
      >;
      components: { schemas: { ErrorCode: { enum: string[] } } };
    };
    const operations = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, operation]) => `${method.toUpperCase()} ${path} ${operation.operationId}`),
    );
    expect(operations.filter((line) => line.includes('/v1/inquiries')).sort()).toEqual([
      'GET /v1/inquiries listInquiries',
      'GET /v1/inquiries/submitted listSubmittedInquiries',
      'GET /v1/inquiries/{id} getInquiry',
      'GET /v1/inquiries/{id}/comments listInquiryComments',
      'GET /v1/inquiries/{id}/comments/{commentId} getInquiryComment',
      'PATCH /v1/inquiries/{id}/status changeInquiryStatus',
      'POST /v1/inquiries submitInquiry',
      'POST /v1/inquiries/{id}/comments addInquiryComment',
    ]);
    expect(document.paths['/v1/inquiries']?.post?.['x-permissions']).toEqual(['InquiriesWrite']);
    expect(document.components.schemas.ErrorCode.enum).toEqual(
      expect.arrayContaining(['Inquiry.NotFound', 'Inquiries.InvalidStatusTransition']),
    );
  });
});

describe.each(testDialects())('inquiries with real tokens and a trusted proxy on %s', (dialect) => {
  let server: TestIdt;

  beforeAll(async () => {
    server = await createTestIdt({ dialect, env: { IDT_TRUST_PROXY: 'true' } });
  });
  afterAll(async () => {
    await server.close();
  });

  it('takes a service account’s client-credentials token end to end, and stores the forwarded IP', async () => {
    const admin = await bootstrapAdmin(server);
    const intake = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'service-account',
      name: 'Intake',
      scopes: ['inquiries.write', 'storage.write', 'storage.read'],
    });
    expect(intake.clientId).toMatch(/^sa-/);
    const tokens = await oidcClient.clientCredentialsGrant(await discover(server, intake), { scope: 'inquiries.write' });
    const response = await server.fetch('/v1/inquiries', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        'content-type': 'application/json',
        'x-forwarded-for': '203.0.113.7, 10.0.0.1',
      },
      body: JSON.stringify(inquiry({ submitterId: admin.userId })),
    });
    const created = await expectJson(response);
    expect(created).toMatchObject({ submitterId: null, status: 'New', name: 'Ada Lovelace' });
    const row = await server.database.db('inquiries').where({ id: created.id }).first();
    expect(row).toMatchObject({ organization_id: admin.organizationId, submitter_ip: '203.0.113.7', submitter_id: null });
    expect(JSON.stringify(created)).not.toContain('203.0.113.7');

    // The administrator (every permission) sees it and moves it on; the service account cannot read it.
    const adminToken = await admin.token();
    const listed = await expectJson(
      await server.fetch('/v1/inquiries?status=NEW', { headers: { authorization: `Bearer ${adminToken}` } }),
    );
    expect(listed.map((entry: { id: string }) => entry.id)).toEqual([created.id]);
    const read = await server.fetch(`/v1/inquiries/${created.id}`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    await expectProblem(read, 404, 'Inquiry.NotFound');
    const listedBySa = await server.fetch('/v1/inquiries', { headers: { authorization: `Bearer ${tokens.access_token}` } });
    await expectProblem(listedBySa, 403, 'Auth.Forbidden');
    expect(listedBySa.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope"');
    expect(
      await expectJson(
        await server.fetch('/v1/inquiries/submitted', { headers: { authorization: `Bearer ${tokens.access_token}` } }),
      ),
    ).toEqual([]);
  });
});
