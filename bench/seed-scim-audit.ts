/**
 * Seeds a migrated idt database for the scim-audit group of bench/run.mjs:
 * one new organization with `--members` active members, a service account of
 * that organization with the `users.read` scope (the users list beside the
 * SCIM list reads the same organization through it), and `--audit-records`
 * records in that organization's audit chain.
 *
 * The users, the organization, the memberships and the client are inserted
 * with plain SQL in batches inside one transaction per table, like
 * bench/seed-scale.ts (no services, events or caches; run it while no server
 * uses the database). The audit records are written through the core's own
 * trail (`createAuditTrail` over `createKnexAuditStore`), `--audit-batch`
 * entries per `audit.record(entries, trx)` in a transaction of their own, so
 * they form a valid hash chain that `GET /v1/audit/verify` accepts. They are
 * `identity.member.joined` records (actor `operator`, target the member,
 * round robin over the members); no outbox is given, so no
 * `audit.event` is published for them.
 *
 *   node --import tsx bench/seed-scim-audit.ts [options]
 *
 *   --members <n>         active members of the new organization (default 10000); the first is its
 *                         owner, the others have the `user` role; all share one password hashed once
 *   --audit-records <n>   records in the organization's audit chain (default 100000)
 *   --audit-batch <n>     records per audit.record call and transaction (default 1000)
 *
 * Reads IDT_DATABASE_URL (else the server's configuration). Prints one JSON line:
 * `{ organizationId, clientId, clientSecret, members, auditRecords, sampleUserName, seconds, timings }`
 * (`sampleUserName`: the userName of the middle member, for a SCIM filter).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { type AuditEntry, createAuditTrail } from '@idt/core';
import { createKnexAuditStore } from '@idt/core/knex';
import { createArgon2Hasher } from '@idt/identity';
import { hashClientSecret } from '@idt/oidc';
import { createLaps, insertAll, openSeedDatabase } from './seed-support.js';

const USAGE = 'usage: node --import tsx bench/seed-scim-audit.ts [--members n] [--audit-records n] [--audit-batch n]';

function parseArgs(argv: string[]) {
  const options = { members: 10_000, auditRecords: 100_000, auditBatch: 1000 };
  const count = (value: string | undefined, flag: string, min: number) => {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < min) {
      console.error(`${flag} needs a whole number of at least ${min}\n${USAGE}`);
      process.exit(2);
    }
    return parsed;
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag = '', inline] = argv[i]?.split('=', 2) ?? [];
    const value = () => inline ?? argv[++i];
    if (flag === '--members') options.members = count(value(), flag, 1);
    else if (flag === '--audit-records') options.auditRecords = count(value(), flag, 0);
    else if (flag === '--audit-batch') options.auditBatch = count(value(), flag, 1);
    else {
      console.error(`Unknown option ${argv[i]}\n${USAGE}`);
      process.exit(2);
    }
  }
  return options;
}

const options = parseArgs(process.argv.slice(2));
const { db, dialect } = openSeedDatabase();
const started = performance.now();
const { timings, lap } = createLaps();

try {
  const base = Date.now() - 86_400_000;
  const at = (offset: number) => new Date(base + offset).toISOString();
  const run = Date.now().toString(36);
  const organizationId = randomUUID();
  const emailOf = (index: number) => `bench-scim-${run}-user-${index}@example.com`;

  let since = performance.now();
  const passwordHash = await createArgon2Hasher().hash('correct horse battery staple');
  const userIds = Array.from({ length: options.members }, () => randomUUID());
  const membershipIds = Array.from({ length: options.members }, () => randomUUID());
  await db.transaction(async (trx) => {
    await trx('identity_organizations').insert({
      id: organizationId,
      name: 'Bench SCIM and audit organization',
      slug: `bench-scim-${run}`,
      enrollment_policy: 'invitation_only',
      status: 'active',
      is_platform: false,
      created_by_user_id: null,
      created_at: at(0),
      updated_at: at(0),
    });
    await insertAll(trx, 'identity_users', options.members, (index) => ({
      id: userIds[index],
      email: emailOf(index),
      username: emailOf(index),
      first_name: 'Bench',
      last_name: `Member ${index}`,
      password_hash: passwordHash,
      status: 'active',
      email_verified: true,
      created_at: at(index),
      updated_at: at(index),
    }));
  });
  lap('users', since);

  since = performance.now();
  await db.transaction(async (trx) => {
    await insertAll(trx, 'identity_memberships', options.members, (index) => ({
      id: membershipIds[index],
      organization_id: organizationId,
      user_id: userIds[index],
      status: 'active',
      created_at: at(index),
      updated_at: at(index),
    }));
    await insertAll(trx, 'identity_membership_roles', options.members, (index) => ({
      membership_id: membershipIds[index],
      role: index === 0 ? 'owner' : 'user',
    }));
  });
  lap('memberships', since);

  // The organization's service account: its client-credentials token reads the users list of this organization.
  since = performance.now();
  const clientId = `sa-bench-scim-${run}`;
  const clientSecret = randomBytes(32).toString('base64url');
  await db('oidc_clients').insert({
    client_id: clientId,
    organization_id: organizationId,
    kind: 'service-account',
    name: 'Bench SCIM organization service account',
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
    created_at: at(0),
    updated_at: at(0),
  });
  lap('client', since);

  // The audit chain, through the core's trail and store: valid links, the chain head kept in core_audit_chains.
  since = performance.now();
  const audit = createAuditTrail({ store: createKnexAuditStore(db), strict: false });
  for (let start = 0; start < options.auditRecords; start += options.auditBatch) {
    const entries: AuditEntry[] = [];
    for (let index = start; index < Math.min(options.auditRecords, start + options.auditBatch); index++) {
      const member = index % options.members;
      entries.push({
        action: 'identity.member.joined',
        organizationId,
        actor: { type: 'operator', id: null, display: 'bench seed' },
        target: { type: 'user', id: userIds[member] as string, display: emailOf(member) },
        ip: '127.0.0.1',
        userAgent: 'idt-bench/seed-scim-audit',
        metadata: { via: 'operator', roles: [member === 0 ? 'owner' : 'user'], record: index + 1 },
      });
    }
    await db.transaction((trx) => audit.record(entries, trx));
  }
  lap('audit records', since);

  if (dialect === 'postgres') {
    since = performance.now();
    await db.raw('vacuum analyze');
    lap('vacuum analyze', since);
  }

  process.stdout.write(
    `${JSON.stringify({
      dialect,
      organizationId,
      clientId,
      clientSecret,
      members: options.members,
      auditRecords: options.auditRecords,
      sampleUserName: emailOf(Math.floor(options.members / 2)),
      seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
      timings,
    })}\n`,
  );
} finally {
  await db.destroy();
}
process.exit(0);
