/**
 * Prepares the single sign-on row of the benchmark (`signin-sso-<engine>`)
 * through the services of the reference server (no HTTP, no bearer token
 * needed), on one side of the round trip at a time, and prints one JSON
 * line. Reads the same environment as the server (IDT_DATABASE_URL,
 * IDT_ISSUER, IDT_KEY_ENCRYPTION_SECRET, …); run by bench/run.mjs after the
 * first administrator was created over HTTP, while no server of that
 * database runs.
 *
 * - `upstream`: on the idt that plays the organization's identity provider,
 *   an application client for the downstream idt (its redirect URIs: each
 *   downstream's `/sso/oidc/callback`) and a pool of users
 *   `bench-sso-<n>@<domain>`, members of the platform organization with the
 *   administrator's password (its stored argon2id hash, inserted with plain
 *   SQL like bench/setup-clients.ts):
 *
 *     node --import tsx bench/setup-sso.ts upstream <organizationId> <adminEmail> <users> <domain> <redirectUri>...
 *     → { clientId, clientSecret, users: [email, …] }
 *
 * - `downstream`: on the measured idt, an organization whose verified domain
 *   is `<domain>` (the `sso_domains` row inserted already verified: the DNS
 *   TXT check is not what the row measures), its OpenID Connect connection
 *   to the upstream (created disabled: bench/run.mjs enables it over the
 *   API around the row's measurement only, since an enabled organization
 *   connection makes every sign-in page identifier-first), and an
 *   application client of that organization:
 *
 *     node --import tsx bench/setup-sso.ts downstream <platformOrganizationId> <domain> <issuer> <clientId> <clientSecret>
 *     → { organizationId, connectionId, app: { clientId, clientSecret, redirectUri, scope } }
 *
 * The downstream needs IDT_SSO_ALLOW_PRIVATE_HOSTS=true (an http issuer on
 * loopback).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createLogger, loadConfig } from '@idt/core';
import { createDatabase } from '@idt/core/knex';
import { createReferenceServer } from '../examples/server/src/index.js';

const REDIRECT_URI = 'https://rp.example.com/sso-callback';
const APP_SCOPES = ['openid', 'profile', 'email'];
/** What the downstream asks the upstream for: the connection's default scopes, written out. */
const UPSTREAM_SCOPES = ['openid', 'email', 'profile'];
const USAGE = `usage:
  node --import tsx bench/setup-sso.ts upstream <organizationId> <adminEmail> <users> <domain> <redirectUri>...
  node --import tsx bench/setup-sso.ts downstream <platformOrganizationId> <domain> <issuer> <clientId> <clientSecret>`;

const [mode, ...args] = process.argv.slice(2);
const usage = () => {
  console.error(USAGE);
  process.exit(2);
};
if (mode === 'upstream' && (args.length < 5 || !/^\d+$/.test(args[2] ?? ''))) usage();
else if (mode === 'downstream' && args.length !== 5) usage();
else if (mode !== 'upstream' && mode !== 'downstream') usage();

const config = loadConfig(process.env);
const logger = createLogger({ level: 'warn', fields: { service: 'idt-bench-setup-sso' } });
const server = await createReferenceServer({ resolvedConfig: config, logger, migrations: 'skip' });
const operator = { userId: null, platformAdmin: true } as const;
const db = createDatabase(config.databaseUrl);

/** The upstream: the downstream's client and the user pool. */
async function upstream([organizationId = '', adminEmail = '', count = '0', domain = '', ...redirectUris]: string[]) {
  const client = await server.services.oidc.clients.register(operator, organizationId, {
    kind: 'application',
    name: 'Bench downstream idt',
    redirectUris,
    scopes: UPSTREAM_SCOPES,
  });
  const admin = (await db('identity_users').where({ email: adminEmail }).first('password_hash')) as
    | { password_hash: string | null }
    | undefined;
  if (!admin?.password_hash) throw new Error(`no password hash for ${adminEmail}`);
  const at = new Date().toISOString();
  const users: string[] = [];
  await db.transaction(async (trx) => {
    for (let index = 0; index < Number(count); index++) {
      const userId = randomUUID();
      const membershipId = randomUUID();
      const email = `bench-sso-${index}@${domain}`;
      await trx('identity_users').insert({
        id: userId,
        email,
        username: email,
        first_name: 'Bench',
        last_name: `SSO ${index}`,
        password_hash: admin.password_hash,
        status: 'active',
        email_verified: true,
        created_at: at,
        updated_at: at,
      });
      // The downstream's client is bound to the platform organization: its users are members.
      await trx('identity_memberships').insert({
        id: membershipId,
        organization_id: organizationId,
        user_id: userId,
        status: 'active',
        created_at: at,
        updated_at: at,
      });
      await trx('identity_membership_roles').insert({ membership_id: membershipId, role: 'user' });
      users.push(email);
    }
  });
  return { clientId: client.client.clientId, clientSecret: client.clientSecret, users };
}

/** The downstream: the organization, its verified domain, its connection to the upstream and its application. */
async function downstream([platformOrganizationId = '', domain = '', issuer = '', clientId = '', clientSecret = '']: string[]) {
  const organizationId = randomUUID();
  const at = new Date().toISOString();
  await db('identity_organizations').insert({
    id: organizationId,
    name: 'Bench SSO organization',
    slug: `bench-sso-${randomBytes(4).toString('hex')}`,
    enrollment_policy: 'invitation_only',
    status: 'active',
    is_platform: false,
    created_by_user_id: null,
    created_at: at,
    updated_at: at,
  });
  await db('sso_domains').insert({
    id: randomUUID(),
    organization_id: organizationId,
    domain,
    token: `idt-verification=${randomBytes(16).toString('hex')}`,
    verified_at: at,
    created_at: at,
  });
  // A platform administrator, as the connection routes see one.
  const actor = { userId: null, organizationId: platformOrganizationId, permissions: new Set(['AdminAccess']) };
  const connection = await server.services.sso.connections.create(actor, organizationId, {
    kind: 'oidc',
    name: 'Bench upstream idt',
    enabled: false,
    oidc: { issuer, clientId, clientSecret, scopes: UPSTREAM_SCOPES },
  });
  const app = await server.services.oidc.clients.register(operator, organizationId, {
    kind: 'application',
    name: 'Bench SSO application',
    redirectUris: [REDIRECT_URI],
    scopes: APP_SCOPES,
  });
  return {
    organizationId,
    connectionId: connection.id,
    app: {
      clientId: app.client.clientId,
      clientSecret: app.clientSecret,
      redirectUri: REDIRECT_URI,
      scope: APP_SCOPES.join(' '),
    },
  };
}

try {
  const result = mode === 'upstream' ? await upstream(args) : await downstream(args);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await db.destroy();
  await server.close();
}
process.exit(0);
