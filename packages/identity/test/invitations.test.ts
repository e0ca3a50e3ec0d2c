import { join } from 'node:path';
import { createManualClock } from '@idt/core';
import { readMailbox } from '@idt/core/mail';
import { createTestIdt, mintAccessToken, seedMembership, seedUser, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, expectProblem, organizationRows, outboxEvents, rolesOf, seedWorld } from './accounts-helpers.js';

describe.each(testDialects())('invitations over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: Awaited<ReturnType<typeof seedWorld>>;
  // Invitation expiry reads this clock.
  const clock = createManualClock();
  const invitations = (orgId: string, rest = '') => `/v1/identity/organizations/${orgId}/invitations${rest}`;

  /** Creates an invitation and returns it with the token mailed for it. */
  async function invite(email: string, body: Record<string, unknown> = {}, token = world.a.tokens.manager) {
    const invitation = await expectJson(
      await call('POST', invitations(world.a.organization.id), { token, body: { email, ...body } }),
      201,
    );
    await server.idt.infrastructure.events.dispatchPending();
    const mails = await readMailbox(join(server.database.dataDir, 'mail'), { to: email });
    const link = /https?:\/\/\S+\/invitations\/accept\?token=\S+/.exec(mails.at(-1)?.text ?? '')?.[0];
    expect(link, 'the invitation mail carries the accept link').toBeDefined();
    const mailed = new URL(link as string).searchParams.get('token') as string;
    return { invitation, token: mailed, mail: mails.at(-1) };
  }

  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock });
    call = caller(server);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  it('mails the link, and the invited user accepts it from an organization-less token', async () => {
    const db = server.database.db;
    const invitee = await seedUser(db, { email: 'ivy@example.com', firstName: 'Ivy' });
    const { invitation, token, mail } = await invite('  IVY@example.com', { roles: ['Manager'] });
    expect(invitation).toEqual({
      id: expect.any(String),
      organizationId: world.a.organization.id,
      email: 'ivy@example.com',
      roles: ['manager'],
      status: 'pending',
      expiresAt: expect.any(String),
      createdAt: expect.any(String),
      invitedByUserId: world.a.manager.id,
    });
    const lifetime = Date.parse(invitation.expiresAt) - Date.parse(invitation.createdAt);
    expect(lifetime).toBe(7 * 86_400_000);
    expect(mail?.subject).toBe('You are invited to join Alpha');
    expect(mail?.text).toContain(`${server.idt.config.authUrl}/invitations/accept?token=`);
    expect(token.startsWith(`${invitation.id}.`)).toBe(true);
    // The token is never stored or published.
    expect(JSON.stringify(await outboxEvents(db, 'InvitationCreatedEvent'))).not.toContain(token.split('.')[1]);
    expect(JSON.stringify(await db('identity_invitations').where({ id: invitation.id }).first())).not.toContain(
      token.split('.')[1],
    );

    const inviteeToken = await mintAccessToken(server, { sub: invitee.id });
    const accepted = await expectJson(
      await call('POST', '/v1/identity/invitations/accept', { token: inviteeToken, body: { token } }),
    );
    expect(accepted).toEqual({
      organization: expect.objectContaining({ id: world.a.organization.id, name: 'Alpha' }),
      membership: { status: 'active', roles: ['manager'], createdAt: expect.any(String) },
    });
    expect(await rolesOf(db, invitee.id, world.a.organization.id)).toEqual(['manager']);
    const memberToken = await mintAccessToken(server, { sub: invitee.id, org_id: world.a.organization.id });
    expect((await call('GET', '/v1/identity/users', { token: memberToken })).status).toBe(200);

    await expectProblem(
      await call('POST', '/v1/identity/invitations/accept', { token: inviteeToken, body: { token } }),
      422,
      'Identity.InvitationInvalid',
    );
    const listed = await expectJson(await call('GET', invitations(world.a.organization.id), { token: world.a.tokens.manager }));
    expect(listed.items.find((item: { id: string }) => item.id === invitation.id)?.status).toBe('accepted');
    expect(await outboxEvents(db, 'InvitationAcceptedEvent')).toEqual([
      { invitationId: invitation.id, organizationId: world.a.organization.id, userId: invitee.id },
    ]);
  });

  it('refuses an invitation token presented by someone with another address', async () => {
    const db = server.database.db;
    const { token, invitation } = await invite('jay@example.com');
    await expectProblem(
      await call('POST', '/v1/identity/invitations/accept', { token: world.outsiderToken, body: { token } }),
      403,
      'Identity.InvitationEmailMismatch',
    );
    expect((await db('identity_invitations').where({ id: invitation.id }).first()).status).toBe('pending');
    expect(await db('identity_memberships').where({ user_id: world.outsider.id })).toEqual([]);
  });

  it('refuses forged and revoked tokens, and bad bodies', async () => {
    const db = server.database.db;
    const kim = await seedUser(db, { email: 'kim@example.com' });
    const kimToken = await mintAccessToken(server, { sub: kim.id });
    const accept = (body: unknown) => call('POST', '/v1/identity/invitations/accept', { token: kimToken, body });

    const first = await invite('kim@example.com');
    await expectProblem(await accept({ token: `${first.invitation.id}.forged` }), 422, 'Identity.InvitationInvalid');
    await expectProblem(await accept({ token: 'nonsense' }), 422, 'Identity.InvitationInvalid');
    const empty = await expectProblem(await accept({ token: ' ' }), 400, 'Validation.Failed');
    expect(Object.keys(empty.errors)).toEqual(['token']);
    await expectProblem(
      await call('POST', '/v1/identity/invitations/accept', { body: { token: first.token } }),
      401,
      'Auth.Unauthenticated',
    );

    const revoke = () =>
      call('DELETE', invitations(world.a.organization.id, `/${first.invitation.id}`), { token: world.a.tokens.manager });
    expect((await revoke()).status).toBe(204);
    expect((await revoke()).status).toBe(204);
    await expectProblem(await accept({ token: first.token }), 422, 'Identity.InvitationInvalid');
    const listed = await expectJson(await call('GET', invitations(world.a.organization.id), { token: world.a.tokens.manager }));
    const statuses = Object.fromEntries(listed.items.map((item: { id: string; status: string }) => [item.id, item.status]));
    expect(statuses[first.invitation.id]).toBe('revoked');
    expect(await db('identity_memberships').where({ user_id: kim.id })).toEqual([]);
  });

  it('activates a pending or denied membership; a suspended one stays suspended (409)', async () => {
    const db = server.database.db;
    const id = world.a.organization.id;
    const pending = await seedUser(db, { email: 'pending@example.com' });
    const suspended = await seedUser(db, { email: 'suspended@example.com' });
    await seedMembership(db, { userId: pending.id, organizationId: id, roles: [], status: 'pending' });
    const forSuspended = await invite('suspended@example.com');
    await seedMembership(db, { userId: suspended.id, organizationId: id, roles: ['user'], status: 'suspended' });
    const forPending = await invite('pending@example.com', { roles: ['user', 'manager'] });

    const accepted = await expectJson(
      await call('POST', '/v1/identity/invitations/accept', {
        token: await mintAccessToken(server, { sub: pending.id }),
        body: { token: forPending.token },
      }),
    );
    expect(accepted.membership).toMatchObject({ status: 'active', roles: ['manager', 'user'] });

    await expectProblem(
      await call('POST', '/v1/identity/invitations/accept', {
        token: await mintAccessToken(server, { sub: suspended.id }),
        body: { token: forSuspended.token },
      }),
      409,
      'Identity.MembershipSuspended',
    );
    expect((await db('identity_memberships').where({ user_id: suspended.id }).first()).status).toBe('suspended');
    expect((await db('identity_invitations').where({ id: forSuspended.invitation.id }).first()).status).toBe('pending');
  });

  it('refuses duplicate invitations, members, unknown roles and roles beyond the inviter’s', async () => {
    const id = world.a.organization.id;
    const create = (body: unknown, token = world.a.tokens.manager) => call('POST', invitations(id), { token, body });
    await expectJson(await create({ email: 'dup@example.com' }), 201);
    await expectProblem(await create({ email: 'DUP@example.com' }), 409, 'Identity.InvitationExists');
    await expectProblem(await create({ email: world.a.user.email }), 409, 'Identity.AlreadyMember');
    const bad = await expectProblem(await create({ email: 'not an address', roles: 'admin' }), 400, 'Validation.Failed');
    expect(Object.keys(bad.errors).sort()).toEqual(['email', 'roles']);
    const unknown = await expectProblem(
      await create({ email: 'x@example.com', roles: ['user', 'ghost'] }),
      400,
      'Validation.Failed',
    );
    expect(Object.keys(unknown.errors)).toEqual(['roles[1]']);
    await expectProblem(await create({ email: 'x@example.com', roles: ['admin'] }), 403, 'Identity.RoleExceedsPermissions');
    await expectProblem(await create({ email: 'x@example.com', roles: ['owner'] }, world.a.tokens.admin), 403, 'Auth.Forbidden');
    await expectProblem(await create({ email: 'x@example.com' }, world.a.tokens.user), 403, 'Auth.Forbidden');
    await expectProblem(await call('GET', invitations(id), { token: world.a.tokens.user }), 403, 'Auth.Forbidden');
    expect(await server.database.db('identity_invitations').where({ email: 'x@example.com' })).toEqual([]);
  });

  it('keeps organization B’s invitations out of reach of organization A', async () => {
    const db = server.database.db;
    const theirs = await expectJson(
      await call('POST', invitations(world.b.organization.id), {
        token: world.b.tokens.owner,
        body: { email: 'beta-only@example.com' },
      }),
      201,
    );
    const before = await organizationRows(db, world.b.organization.id);
    await expectProblem(
      await call('DELETE', invitations(world.a.organization.id, `/${theirs.id}`), { token: world.a.tokens.owner }),
      404,
      'Identity.InvitationNotFound',
    );
    await expectProblem(
      await call('DELETE', invitations(world.b.organization.id, `/${theirs.id}`), { token: world.a.tokens.owner }),
      404,
      'Identity.OrganizationNotFound',
    );
    await expectProblem(
      await call('GET', invitations(world.b.organization.id), { token: world.a.tokens.owner }),
      404,
      'Identity.OrganizationNotFound',
    );
    const ours = await expectJson(
      await call('GET', `${invitations(world.a.organization.id)}?pageSize=100`, { token: world.a.tokens.owner }),
    );
    expect(ours.items.map((item: { organizationId: string }) => item.organizationId)).not.toContain(world.b.organization.id);
    expect(await organizationRows(db, world.b.organization.id)).toEqual(before);
  });

  it('answers 422 when revoking an accepted invitation, and pages the list newest first', async () => {
    const db = server.database.db;
    const lee = await seedUser(db, { email: 'lee@example.com' });
    const { invitation, token } = await invite('lee@example.com');
    await expectJson(
      await call('POST', '/v1/identity/invitations/accept', {
        token: await mintAccessToken(server, { sub: lee.id }),
        body: { token },
      }),
    );
    await expectProblem(
      await call('DELETE', invitations(world.a.organization.id, `/${invitation.id}`), { token: world.a.tokens.manager }),
      422,
      'Identity.InvitationNotPending',
    );
    const page = await expectJson(
      await call('GET', `${invitations(world.a.organization.id)}?pageSize=2`, { token: world.a.tokens.manager }),
    );
    expect(page).toMatchObject({ page: 1, pageSize: 2, hasNextPage: true, hasPreviousPage: false });
    expect(page.items[0].id).toBe(invitation.id);
  });

  // Last: the clock moves a week on, past the lifetime of the tokens minted for the suite.
  it('refuses an invitation 7 days after it was made, and lists it as expired', async () => {
    const db = server.database.db;
    const kit = await seedUser(db, { email: 'kit@example.com' });
    const { invitation, token } = await invite('kit@example.com');
    clock.advance(7 * 86_400_000);
    const kitToken = await mintAccessToken(server, { sub: kit.id });
    await expectProblem(
      await call('POST', '/v1/identity/invitations/accept', { token: kitToken, body: { token } }),
      422,
      'Identity.InvitationExpired',
    );
    const managerToken = await mintAccessToken(server, { sub: world.a.manager.id, org_id: world.a.organization.id });
    const listed = await expectJson(await call('GET', invitations(world.a.organization.id), { token: managerToken }));
    expect(listed.items.find((item: { id: string }) => item.id === invitation.id)?.status).toBe('expired');
    expect(await db('identity_memberships').where({ user_id: kit.id })).toEqual([]);
  });
});
