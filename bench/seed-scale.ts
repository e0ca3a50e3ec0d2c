/**
 * Seeds a migrated idt database in bulk for the scale run: users,
 * organizations, memberships and service-account clients, inserted with
 * plain SQL in batches inside transactions (no services, no events, no
 * caches; run it while no server uses the database, or restart the servers
 * afterwards). Whatever the migrations maintain by themselves (triggers,
 * counters) is left to them.
 *
 *   node --import tsx bench/seed-scale.ts [options]
 *
 *   --users <n>              users (default 100000); all share one password, hashed once with idt's hasher
 *   --organizations <n>      organizations besides the platform one (default 10000)
 *   --memberships <n>        memberships (default 100000, at most --users): the first
 *                            --platform-members users join the platform organization, each
 *                            further user joins one seeded organization, round robin
 *   --platform-members <n>   members seeded into the platform organization (default 45000:
 *                            page 2,000 of 20 exists)
 *   --clients <n>            service-account clients in the platform organization (default 10000)
 *   --clients-file <path>    their credentials, a JSON array of { clientId, clientSecret }: read
 *                            when the file exists (its length wins over --clients), else written
 *   --organization <id>      the platform organization (default: the one marked is_platform)
 *
 * Reads IDT_DATABASE_URL (else the server's configuration). Prints one JSON line with what was
 * inserted and how long it took. bench/run.mjs runs it twice: the clients
 * before the spread group (`--users 0 --organizations 0 --memberships 0`),
 * the rest before the scale group (`--clients 0`).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createArgon2Hasher } from '@idt/identity';
import { hashClientSecret } from '@idt/oidc';
import { createLaps, insertAll, openSeedDatabase } from './seed-support.js';

const USAGE =
  'usage: node --import tsx bench/seed-scale.ts [--users n] [--organizations n] [--memberships n] [--platform-members n] [--clients n] [--clients-file path] [--organization id]';

function parseArgs(argv: string[]) {
  const options = {
    users: 100_000,
    organizations: 10_000,
    memberships: 100_000,
    platformMembers: 45_000,
    clients: 10_000,
    clientsFile: undefined as string | undefined,
    organization: undefined as string | undefined,
  };
  const count = (value: string | undefined, flag: string) => {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < 0) {
      console.error(`${flag} needs a whole number\n${USAGE}`);
      process.exit(2);
    }
    return parsed;
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag = '', inline] = argv[i]?.split('=', 2) ?? [];
    const value = () => inline ?? argv[++i];
    if (flag === '--users') options.users = count(value(), flag);
    else if (flag === '--organizations') options.organizations = count(value(), flag);
    else if (flag === '--memberships') options.memberships = count(value(), flag);
    else if (flag === '--platform-members') options.platformMembers = count(value(), flag);
    else if (flag === '--clients') options.clients = count(value(), flag);
    else if (flag === '--clients-file') options.clientsFile = value();
    else if (flag === '--organization') options.organization = value();
    else {
      console.error(`Unknown option ${argv[i]}\n${USAGE}`);
      process.exit(2);
    }
  }
  if (options.memberships > options.users) options.memberships = options.users;
  if (options.platformMembers > options.memberships) options.platformMembers = options.memberships;
  if (options.memberships > options.platformMembers && options.organizations === 0) {
    console.error(`memberships beyond --platform-members need --organizations\n${USAGE}`);
    process.exit(2);
  }
  return options;
}

const options = parseArgs(process.argv.slice(2));
const { db, dialect } = openSeedDatabase();
const started = performance.now();
const { timings, lap } = createLaps();

try {
  const platform =
    options.organization ??
    ((await db('identity_organizations').where({ is_platform: true }).first('id')) as { id: string } | undefined)?.id;
  if (!platform) throw new Error('no platform organization: run setup first');
  // Seeded rows are older than anything created afterwards, one millisecond apart, in insertion order.
  const base = Date.now() - 86_400_000;
  const at = (offset: number) => new Date(base + offset).toISOString();
  const run = `${Date.now().toString(36)}`;

  const userIds: string[] = [];
  if (options.users > 0) {
    const since = performance.now();
    const passwordHash = await createArgon2Hasher().hash('correct horse battery staple');
    for (let index = 0; index < options.users; index++) userIds.push(randomUUID());
    await db.transaction((trx) =>
      insertAll(trx, 'identity_users', options.users, (index) => {
        const email = `bench-${run}-user-${index}@example.com`;
        return {
          id: userIds[index],
          email,
          username: email,
          first_name: 'Bench',
          last_name: `User ${index}`,
          password_hash: passwordHash,
          status: 'active',
          email_verified: true,
          created_at: at(index),
          updated_at: at(index),
        };
      }),
    );
    lap('users', since);
  }

  const organizationIds: string[] = [];
  if (options.organizations > 0) {
    const since = performance.now();
    for (let index = 0; index < options.organizations; index++) organizationIds.push(randomUUID());
    await db.transaction((trx) =>
      insertAll(trx, 'identity_organizations', options.organizations, (index) => ({
        id: organizationIds[index],
        name: `Bench organization ${index}`,
        slug: `bench-${run}-org-${index}`,
        enrollment_policy: 'invitation_only',
        status: 'active',
        is_platform: false,
        created_by_user_id: null,
        created_at: at(index),
        updated_at: at(index),
      })),
    );
    lap('organizations', since);
  }

  if (options.memberships > 0) {
    const since = performance.now();
    const membershipIds: string[] = [];
    for (let index = 0; index < options.memberships; index++) membershipIds.push(randomUUID());
    // Membership k: user k; the first platformMembers in the platform organization, the rest round
    // robin over the seeded organizations (each user once, so (organization, user) stays unique).
    const organizationOf = (index: number) =>
      index < options.platformMembers
        ? platform
        : (organizationIds[(index - options.platformMembers) % organizationIds.length] as string);
    await db.transaction(async (trx) => {
      await insertAll(trx, 'identity_memberships', options.memberships, (index) => ({
        id: membershipIds[index],
        organization_id: organizationOf(index),
        user_id: userIds[index],
        status: 'active',
        created_at: at(index),
        updated_at: at(index),
      }));
      // Everyone is a `user`; the first member of each seeded organization is its `owner`.
      await insertAll(trx, 'identity_membership_roles', options.memberships, (index) => ({
        membership_id: membershipIds[index],
        role: index >= options.platformMembers && index - options.platformMembers < organizationIds.length ? 'owner' : 'user',
      }));
    });
    lap('memberships', since);
  }

  let clientCount = 0;
  if (options.clients > 0 || options.clientsFile) {
    const since = performance.now();
    let credentials: Array<{ clientId: string; clientSecret: string }>;
    if (options.clientsFile && existsSync(options.clientsFile)) {
      credentials = JSON.parse(readFileSync(options.clientsFile, 'utf8'));
    } else {
      credentials = Array.from({ length: options.clients }, (_, index) => ({
        clientId: `sa-bench-${run}-${index}`,
        clientSecret: randomBytes(32).toString('base64url'),
      }));
      if (options.clientsFile) writeFileSync(options.clientsFile, JSON.stringify(credentials));
    }
    clientCount = credentials.length;
    await db.transaction((trx) =>
      insertAll(trx, 'oidc_clients', credentials.length, (index) => {
        const { clientId, clientSecret } = credentials[index] as { clientId: string; clientSecret: string };
        return {
          client_id: clientId,
          organization_id: platform,
          kind: 'service-account',
          name: `Bench spread ${index}`,
          status: 'active',
          first_party: false,
          redirect_uris: '[]',
          post_logout_redirect_uris: '[]',
          backchannel_logout_uri: null,
          backchannel_logout_session_required: false,
          frontchannel_logout_uri: null,
          scopes: JSON.stringify(['users.read']),
          refresh_token_lifetime: null,
          secret_hash: hashClientSecret(clientSecret),
          created_by_user_id: null,
          created_at: at(index),
          updated_at: at(index),
        };
      }),
    );
    lap('clients', since);
  }

  // A live PostgreSQL database would have been vacuumed and analyzed by autovacuum by now (statistics
  // for the planner, the visibility map for index-only scans); SQLite has no such daemon.
  if (dialect === 'postgres' && options.users + options.organizations + options.memberships + clientCount > 0) {
    const since = performance.now();
    await db.raw('vacuum analyze');
    lap('vacuum analyze', since);
  }

  process.stdout.write(
    `${JSON.stringify({
      dialect,
      platformOrganizationId: platform,
      users: options.users,
      organizations: options.organizations,
      memberships: options.memberships,
      platformMembers: options.platformMembers,
      clients: clientCount,
      seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
      timings,
    })}\n`,
  );
} finally {
  await db.destroy();
}
process.exit(0);
