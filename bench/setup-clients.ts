/**
 * Registers the benchmark's clients through the services of the reference
 * server (no HTTP, no bearer token needed) and prints one JSON line:
 *
 *   { organizationId, clientId, clientSecret, app: { clientId, clientSecret, redirectUri, scope }, adminPasswordHash, chainUsers }
 *
 * - a service account with the `users.read` scope (client credentials, the
 *   bearer reads);
 * - an application (authorization code + PKCE, refresh tokens) for the
 *   sign-in and refresh flows of the bench administrator;
 * - the administrator's stored password hash, which bench/baseline-argon2.mjs
 *   verifies (idt's exact argon2id parameters);
 * - `chainUsers` members of the platform organization (role `user`, the
 *   administrator's password), one per refresh-token chain: idt keeps at
 *   most 5 active sessions per user and revokes the tokens of the sessions
 *   it evicts, so chains of one user would end each other. Inserted with
 *   plain SQL, like bench/seed-scale.ts.
 * - `totpUsers` more such members, each with a TOTP authenticator enrolled
 *   through the identity module's second-factor service (its code computed
 *   with otplib), for the TOTP sign-in row: `[{ email, secret, lastStep }]`,
 *   `lastStep` being the time step its enrolment used (a code works once).
 *   Empty when the identity module has no second factors.
 *
 *   node --import tsx bench/setup-clients.ts <organizationId> [adminEmail] [chainUsers] [totpUsers]
 *
 * Reads the same environment as the server (IDT_DATABASE_URL, IDT_ISSUER,
 * IDT_KEY_ENCRYPTION_SECRET, …). Run by bench/run.mjs after the first
 * administrator was created over HTTP; `organizationId` is the platform
 * organization that setup returned.
 */
import { randomUUID } from 'node:crypto';
import { createLogger, loadConfig } from '@idt/core';
import { createDatabase } from '@idt/core/knex';
import { generateSync } from 'otplib';
import { createReferenceServer } from '../examples/server/src/index.js';

const [organizationId, adminEmail = 'bench-admin@example.com', chainCount = '0', totpCount = '0'] = process.argv.slice(2);
if (!organizationId || !/^\d+$/.test(chainCount) || !/^\d+$/.test(totpCount)) {
  console.error('usage: node --import tsx bench/setup-clients.ts <organizationId> [adminEmail] [chainUsers] [totpUsers]');
  process.exit(2);
}

/** The part of the identity module's second-factor service the TOTP users are enrolled with. */
interface TotpEnrolment {
  beginTotp(userId: string, label: string): Promise<{ enrolmentId: string; secret: string }>;
  confirmTotp(userId: string, enrolmentId: string, code: string): Promise<unknown>;
}

const REDIRECT_URI = 'https://rp.example.com/callback';
const APP_SCOPES = ['openid', 'profile', 'email', 'roles', 'offline_access', 'users.read'];

const config = loadConfig(process.env);
const logger = createLogger({ level: 'warn', fields: { service: 'idt-bench-setup' } });
const server = await createReferenceServer({ resolvedConfig: config, logger, migrations: 'skip' });
const operator = { userId: null, platformAdmin: true } as const;
try {
  const service = await server.services.oidc.clients.register(operator, organizationId, {
    kind: 'service-account',
    name: 'Bench service account',
    scopes: ['users.read'],
  });
  const app = await server.services.oidc.clients.register(operator, organizationId, {
    kind: 'application',
    name: 'Bench application',
    redirectUris: [REDIRECT_URI],
    postLogoutRedirectUris: ['https://rp.example.com/signed-out'],
    scopes: APP_SCOPES,
  });
  const db = createDatabase(config.databaseUrl);
  let adminPasswordHash: string | undefined;
  const chainUsers: string[] = [];
  const totpMembers: Array<{ userId: string; email: string }> = [];
  const totpUsers: Array<{ email: string; secret: string; lastStep: number }> = [];
  try {
    const row = (await db('identity_users').where({ email: adminEmail }).first('password_hash')) as
      | { password_hash: string | null }
      | undefined;
    adminPasswordHash = row?.password_hash ?? undefined;
    const at = new Date().toISOString();
    const factors = (server.services.identity as unknown as { factors?: TotpEnrolment }).factors;
    const members = [
      ...Array.from({ length: Number(chainCount) }, (_, index) => ({ email: `bench-chain-${index}@example.com`, totp: false })),
      ...Array.from({ length: factors ? Number(totpCount) : 0 }, (_, index) => ({
        email: `bench-totp-${index}@example.com`,
        totp: true,
      })),
    ];
    await db.transaction(async (trx) => {
      for (const [index, member] of members.entries()) {
        const userId = randomUUID();
        const membershipId = randomUUID();
        const { email } = member;
        await trx('identity_users').insert({
          id: userId,
          email,
          username: email,
          first_name: 'Bench',
          last_name: `${member.totp ? 'TOTP' : 'Chain'} ${index}`,
          password_hash: adminPasswordHash ?? null,
          status: 'active',
          email_verified: true,
          created_at: at,
          updated_at: at,
        });
        await trx('identity_memberships').insert({
          id: membershipId,
          organization_id: organizationId,
          user_id: userId,
          status: 'active',
          created_at: at,
          updated_at: at,
        });
        await trx('identity_membership_roles').insert({ membership_id: membershipId, role: 'user' });
        if (member.totp) totpMembers.push({ userId, email });
        else chainUsers.push(email);
      }
    });
    for (const member of totpMembers) {
      if (!factors) break;
      const begun = await factors.beginTotp(member.userId, member.email);
      const at = Math.floor(Date.now() / 1000);
      await factors.confirmTotp(member.userId, begun.enrolmentId, generateSync({ secret: begun.secret, epoch: at }));
      totpUsers.push({ email: member.email, secret: begun.secret, lastStep: Math.floor(at / 30) });
    }
  } finally {
    await db.destroy();
  }
  process.stdout.write(
    `${JSON.stringify({
      organizationId,
      clientId: service.client.clientId,
      clientSecret: service.clientSecret,
      app: {
        clientId: app.client.clientId,
        clientSecret: app.clientSecret,
        redirectUri: REDIRECT_URI,
        scope: APP_SCOPES.join(' '),
      },
      adminPasswordHash,
      chainUsers,
      totpUsers,
    })}\n`,
  );
} finally {
  await server.close();
}
process.exit(0);
