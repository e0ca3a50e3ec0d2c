import { createManualClock } from '@idt/core';
import {
  createTestDatabase,
  createTestIdt,
  mintAccessToken,
  referenceMigrationSets,
  seedMembership,
  seedOrganization,
  seedUser,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, expectProblem, outboxEvents, seedWorld, type World } from './helpers.js';

const checkout = { key: 'new-checkout', name: 'New checkout', description: 'The one-page checkout', type: 'boolean' };

describe.each(testDialects())('feature flags over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: World;

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    call = caller(server);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  describe('/v1/platform/flags', () => {
    it('defines a flag (201 with Location), lists it, and refuses a duplicate key with 409', async () => {
      const response = await call('POST', '/v1/platform/flags', { token: world.platformToken, body: checkout });
      const created = await expectJson(response, 201);
      expect(response.headers.get('location')).toBe('/v1/platform/flags/new-checkout');
      expect(created).toEqual({
        ...checkout,
        defaultEnabled: false,
        rolloutPercentage: 0,
        variants: [],
        defaultVariant: null,
        createdAt: expect.any(String),
        updatedAt: created.createdAt,
      });
      expect((await outboxEvents(server.database.db, 'FeatureFlagChangedEvent')).at(-1)).toMatchObject({
        key: 'new-checkout',
        change: 'created',
      });
      await expectProblem(
        await call('POST', '/v1/platform/flags', { token: world.platformToken, body: checkout }),
        409,
        'FeatureFlags.KeyExists',
      );
      const list = await expectJson(await call('GET', '/v1/platform/flags', { token: world.platformToken }));
      expect(list.map((flag: { key: string }) => flag.key)).toEqual(['new-checkout']);
    });

    it('gives one 201 and one 409 to a concurrent double POST', async () => {
      const body = { ...checkout, key: 'race' };
      const statuses = (
        await Promise.all([1, 2].map(() => call('POST', '/v1/platform/flags', { token: world.platformToken, body })))
      ).map((response) => response.status);
      expect(statuses.sort()).toEqual([201, 409]);
      expect((await call('DELETE', '/v1/platform/flags/race', { token: world.platformToken })).status).toBe(204);
    });

    it('validates the definition (400 keyed by field)', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ ...checkout, key: 'Has Spaces' }, 'key'],
        [{ ...checkout, key: '-leading' }, 'key'],
        [{ ...checkout, key: 'x'.repeat(101) }, 'key'],
        [{ ...checkout, key: 'ok-key', name: '' }, 'name'],
        [{ ...checkout, key: 'ok-key', type: 'maybe' }, 'type'],
        [{ ...checkout, key: 'ok-key', type: 'percentage', rolloutPercentage: 101 }, 'rolloutPercentage'],
        [{ ...checkout, key: 'ok-key', type: 'variant', variants: [] }, 'variants'],
        [
          { ...checkout, key: 'ok-key', type: 'variant', variants: [{ name: 'a', weight: 1 }], defaultVariant: 'b' },
          'defaultVariant',
        ],
        [{ ...checkout, key: 'ok-key', variants: [{ name: 'a', weight: 1 }] }, 'variants'],
      ];
      for (const [body, field] of cases) {
        const problem = await expectProblem(
          await call('POST', '/v1/platform/flags', { token: world.platformToken, body }),
          400,
          'Validation.Failed',
        );
        expect(Object.keys(problem.errors), JSON.stringify(body)).toContain(field);
      }
    });

    it('answers 403 to everyone but platform administrators', async () => {
      for (const token of [world.a.tokens.owner, world.a.tokens.user]) {
        await expectProblem(
          await call('POST', '/v1/platform/flags', { token, body: { ...checkout, key: 'nope' } }),
          403,
          'Auth.Forbidden',
        );
        await expectProblem(await call('GET', '/v1/platform/flags', { token }), 403, 'Auth.Forbidden');
        await expectProblem(await call('DELETE', '/v1/platform/flags/new-checkout', { token }), 403, 'Auth.Forbidden');
      }
    });

    it('replaces a definition with PUT (404 for an unknown key)', async () => {
      await expectJson(
        await call('POST', '/v1/platform/flags', { token: world.platformToken, body: { ...checkout, key: 'editable' } }),
        201,
      );
      const updated = await expectJson(
        await call('PUT', '/v1/platform/flags/editable', {
          token: world.platformToken,
          body: { name: 'Editable', type: 'percentage', rolloutPercentage: 40, defaultEnabled: true },
        }),
      );
      expect(updated).toMatchObject({
        key: 'editable',
        name: 'Editable',
        type: 'percentage',
        rolloutPercentage: 40,
        description: '',
      });
      await expectProblem(
        await call('PUT', '/v1/platform/flags/missing', { token: world.platformToken, body: { name: 'x', type: 'boolean' } }),
        404,
        'FeatureFlags.NotFound',
      );
      expect((await call('DELETE', '/v1/platform/flags/editable', { token: world.platformToken })).status).toBe(204);
      await expectProblem(
        await call('DELETE', '/v1/platform/flags/editable', { token: world.platformToken }),
        404,
        'FeatureFlags.NotFound',
      );
    });
  });

  describe('organization overrides and evaluation', () => {
    it('lists the flags with this organization’s overrides only (ConfigurationRead)', async () => {
      await expectJson(
        await call('PUT', '/v1/configuration/flags/new-checkout/override', {
          token: world.b.tokens.owner,
          body: { enabled: true },
        }),
      );
      const a = await expectJson(await call('GET', '/v1/configuration/flags', { token: world.a.tokens.user }));
      expect(a.find((flag: { key: string }) => flag.key === 'new-checkout')).toMatchObject({ override: null, userOverrides: [] });
      const b = await expectJson(await call('GET', '/v1/configuration/flags', { token: world.b.tokens.user }));
      expect(b.find((flag: { key: string }) => flag.key === 'new-checkout')).toMatchObject({
        override: { userId: null, enabled: true, variant: null, expiresAt: null, isExpired: false },
      });
      await expectProblem(await call('GET', '/v1/configuration/flags', { token: world.a.tokens.manager }), 403, 'Auth.Forbidden');
    });

    it('evaluates per organization and per user: user override > organization override > default', async () => {
      const evaluate = async (token: string) =>
        (await expectJson(await call('GET', '/v1/configuration/flags/evaluate', { token })))['new-checkout'];
      expect(await evaluate(world.a.tokens.user)).toBe(false);
      expect(await evaluate(world.b.tokens.user)).toBe(true);
      const saved = await expectJson(
        await call('PUT', '/v1/configuration/flags/new-checkout/override', {
          token: world.b.tokens.manager,
          body: { enabled: false, userId: world.b.user.id },
        }),
      );
      expect(saved).toMatchObject({ userId: world.b.user.id, enabled: false });
      expect(await evaluate(world.b.tokens.user)).toBe(false);
      expect(await evaluate(world.b.tokens.admin)).toBe(true);
      expect((await outboxEvents(server.database.db, 'FeatureFlagChangedEvent')).at(-1)).toMatchObject({
        key: 'new-checkout',
        organizationId: world.b.organization.id,
        userId: world.b.user.id,
        change: 'override-set',
      });
      const config = await expectJson(await call('GET', '/v1/configuration/config', { token: world.b.tokens.admin }));
      expect(config.flags['new-checkout']).toBe(true);

      const remove = `/v1/configuration/flags/new-checkout/override?userId=${world.b.user.id}`;
      expect((await call('DELETE', remove, { token: world.b.tokens.manager })).status).toBe(204);
      expect(await evaluate(world.b.tokens.user)).toBe(true);
    });

    it('refuses a member of another organization, an unknown variant, an unknown flag, and callers without ConfigurationManage', async () => {
      const put = (token: string, key: string, body: unknown) =>
        call('PUT', `/v1/configuration/flags/${key}/override`, { token, body });
      const stranger = await expectProblem(
        await put(world.a.tokens.owner, 'new-checkout', { enabled: true, userId: world.b.user.id }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(stranger.errors)).toEqual(['userId']);
      const variant = await expectProblem(
        await put(world.a.tokens.owner, 'new-checkout', { variant: 'blue' }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(variant.errors)).toEqual(['variant']);
      const empty = await expectProblem(await put(world.a.tokens.owner, 'new-checkout', {}), 400, 'Validation.Failed');
      expect(Object.keys(empty.errors)).toEqual(['enabled']);
      await expectProblem(await put(world.a.tokens.owner, 'missing', { enabled: true }), 404, 'FeatureFlags.NotFound');
      await expectProblem(await put(world.a.tokens.user, 'new-checkout', { enabled: true }), 403, 'Auth.Forbidden');
      await expectProblem(
        await call('DELETE', '/v1/configuration/flags/new-checkout/override', { token: world.a.tokens.user }),
        403,
        'Auth.Forbidden',
      );
      await expectProblem(await call('GET', '/v1/configuration/flags/evaluate'), 401, 'Auth.Unauthenticated');
    });

    it('returns the variant name for variant flags', async () => {
      await expectJson(
        await call('POST', '/v1/platform/flags', {
          token: world.platformToken,
          body: {
            key: 'layout',
            name: 'Layout',
            type: 'variant',
            defaultEnabled: true,
            variants: [
              { name: 'grid', weight: 1 },
              { name: 'list', weight: 1 },
            ],
            defaultVariant: 'grid',
          },
        }),
        201,
      );
      const values = await expectJson(await call('GET', '/v1/configuration/flags/evaluate', { token: world.a.tokens.user }));
      expect(['grid', 'list']).toContain(values.layout);
      await expectJson(
        await call('PUT', '/v1/configuration/flags/layout/override', { token: world.a.tokens.owner, body: { variant: 'list' } }),
      );
      expect(
        (await expectJson(await call('GET', '/v1/configuration/flags/evaluate', { token: world.a.tokens.user }))).layout,
      ).toBe('list');
    });

    it('deleting a flag removes every override of it', async () => {
      expect((await call('DELETE', '/v1/platform/flags/layout', { token: world.platformToken })).status).toBe(204);
      expect(await server.database.db('platform_flag_overrides').where({ flag_key: 'layout' })).toEqual([]);
      const values = await expectJson(await call('GET', '/v1/configuration/flags/evaluate', { token: world.a.tokens.user }));
      expect(values.layout).toBeUndefined();
    });
  });
});

describe.each(testDialects())('flag evaluation is deterministic across restarts on %s', (dialect) => {
  it('evaluates 10,000 users twice, and again after a restart, with identical answers; a 30 % flag enables 30 % ± 2 %', async () => {
    const database = await createTestDatabase(dialect, referenceMigrationSets);
    try {
      const organization = await seedOrganization(database.db, { name: 'Rollout' });
      const users = Array.from({ length: 10_000 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
      const first = await createTestIdt({ dialect, database });
      // The flag row as a platform administrator's POST stores it.
      await database.db('platform_flags').insert({
        key: 'rollout-30',
        name: 'Rollout',
        description: '',
        type: 'percentage',
        default_enabled: false,
        rollout_percentage: 30,
        variants: '[]',
        default_variant: null,
        created_at: new Date().toISOString(),
        updated_at: new Date().toISOString(),
      });
      const evaluateAll = async (server: TestIdt) => {
        const answers: boolean[] = [];
        for (const userId of users) {
          const values = await server.idt.services.platform.flags.evaluate({ organizationId: organization.id, userId });
          answers.push(values['rollout-30'] === true);
        }
        return answers;
      };
      const once = await evaluateAll(first);
      const twice = await evaluateAll(first);
      await first.close();
      const restarted = await createTestIdt({ dialect, database });
      try {
        const afterRestart = await evaluateAll(restarted);
        expect(twice).toEqual(once);
        expect(afterRestart).toEqual(once);
        const enabled = once.filter(Boolean).length;
        expect(enabled).toBeGreaterThanOrEqual(2800);
        expect(enabled).toBeLessThanOrEqual(3200);
        // The HTTP answer for a member is the service's.
        const member = await seedUser(database.db, {});
        // An owner: seeding one also ends setup mode.
        await seedMembership(database.db, { userId: member.id, organizationId: organization.id, roles: ['owner'] });
        const token = await mintAccessToken(restarted, { sub: member.id, org_id: organization.id });
        const viaHttp = await expectJson(await caller(restarted)('GET', '/v1/configuration/flags/evaluate', { token }));
        const viaService = await restarted.idt.services.platform.flags.evaluate({
          organizationId: organization.id,
          userId: member.id,
        });
        expect(viaHttp).toEqual(viaService);
      } finally {
        await restarted.close();
      }
    } finally {
      await database.destroy();
    }
  });
});

describe.each(testDialects())('override expiry on a manual clock on %s', (dialect) => {
  const clock = createManualClock(Date.now());
  let server: TestIdt;
  let world: World;

  beforeAll(async () => {
    server = await createTestIdt({ dialect, clock });
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  it('applies an override until its expiresAt, then the default again, without sleeping', async () => {
    const call = caller(server);
    await expectJson(
      await call('POST', '/v1/platform/flags', { token: world.platformToken, body: { ...checkout, key: 'promo' } }),
      201,
    );
    const expiresAt = new Date(clock.now().getTime() + 60 * 60 * 1000).toISOString();
    const saved = await expectJson(
      await call('PUT', '/v1/configuration/flags/promo/override', {
        token: world.a.tokens.owner,
        body: { enabled: true, expiresAt },
      }),
    );
    expect(saved).toMatchObject({ enabled: true, expiresAt, isExpired: false });
    const evaluate = async () => {
      const token = await mintAccessToken(server, { sub: world.a.user.id, org_id: world.a.organization.id });
      return (await expectJson(await call('GET', '/v1/configuration/flags/evaluate', { token }))).promo;
    };
    expect(await evaluate()).toBe(true);
    clock.advance(60 * 60 * 1000 - 1);
    expect(await evaluate()).toBe(true);
    clock.advance(1);
    expect(await evaluate()).toBe(false);
    const ownerToken = await mintAccessToken(server, { sub: world.a.owner.id, org_id: world.a.organization.id });
    const listed = await expectJson(await call('GET', '/v1/configuration/flags', { token: ownerToken }));
    expect(listed.find((flag: { key: string }) => flag.key === 'promo').override).toMatchObject({ isExpired: true });
    const past = await expectProblem(
      await call('PUT', '/v1/configuration/flags/promo/override', {
        token: ownerToken,
        body: { enabled: true, expiresAt: 'tomorrow' },
      }),
      400,
      'Validation.Failed',
    );
    expect(Object.keys(past.errors)).toEqual(['expiresAt']);
  });
});
