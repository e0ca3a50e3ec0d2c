import { newId } from '@idt/core';
import { knexUnitOfWork, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import { ADMIN_ROLES } from '../authorization/roles.js';
import type {
  SecondFactorAttempts,
  SecondFactorStore,
  SecondFactorWrites,
  StoredTotpEnrolment,
  StoredTotpFactor,
} from '../factors/store.js';
import { type KnexCredentialStoreOptions, lockUser } from './credential-store-deps.js';

const ENROLMENTS = 'identity_totp_enrolments';
const FACTORS = 'identity_totp_factors';
const CODES = 'identity_recovery_codes';
const PASSKEYS = 'identity_passkeys';
const LOCKS = 'identity_second_factor_locks';

function enrolmentFromRow(row: Record<string, unknown>): StoredTotpEnrolment {
  return {
    id: String(row.id),
    userId: String(row.user_id),
    secretSealed: String(row.secret_sealed),
    createdAt: toIso(row.created_at),
    expiresAt: toIso(row.expires_at),
  };
}

function attemptsFromRow(row: Record<string, unknown>): SecondFactorAttempts {
  return {
    failures: Number(row.failures),
    windowStartedAt: toIso(row.window_started_at),
    lockedUntil: toIsoOrNull(row.locked_until),
  };
}

function factorFromRow(row: Record<string, unknown>): StoredTotpFactor {
  return {
    id: String(row.id),
    userId: String(row.user_id),
    secretSealed: String(row.secret_sealed),
    // Postgres answers bigint as a string.
    lastUsedStep: row.last_used_step === null || row.last_used_step === undefined ? null : Number(row.last_used_step),
    createdAt: toIso(row.created_at),
  };
}

/** Marks a TOTP step used when it is later than the last one (compare-and-set), in a transaction or not. */
async function useStep(db: Knex, userId: string, step: number): Promise<boolean> {
  const updated = await db(FACTORS)
    .where({ user_id: userId })
    .andWhere((where) => where.whereNull('last_used_step').orWhere('last_used_step', '<', step))
    .update({ last_used_step: step });
  return updated === 1;
}

/** The {@link SecondFactorWrites} primitives over one transaction. */
function secondFactorWrites(trx: Knex.Transaction): SecondFactorWrites {
  return {
    async lockUser(userId) {
      if (!(await lockUser(trx, userId))) return undefined;
      const row = await trx('identity_users').where({ id: userId }).first('email', 'status');
      return row ? { email: String(row.email), status: String(row.status) } : undefined;
    },
    async insertEnrolment(enrolment) {
      await trx(ENROLMENTS).where({ user_id: enrolment.userId }).delete();
      await trx(ENROLMENTS).insert({
        id: enrolment.id,
        user_id: enrolment.userId,
        secret_sealed: enrolment.secretSealed,
        created_at: enrolment.createdAt,
        expires_at: enrolment.expiresAt,
      });
    },
    async findEnrolment(userId, id, now) {
      const row = await trx(ENROLMENTS).where({ id, user_id: userId }).andWhere('expires_at', '>', now).first();
      return row ? enrolmentFromRow(row) : undefined;
    },
    async deleteEnrolments(userId) {
      await trx(ENROLMENTS).where({ user_id: userId }).delete();
    },
    async findTotp(userId) {
      const row = await trx(FACTORS).where({ user_id: userId }).first();
      return row ? factorFromRow(row) : undefined;
    },
    async putTotp(factor) {
      await trx(FACTORS).where({ user_id: factor.userId }).delete();
      await trx(FACTORS).insert({
        user_id: factor.userId,
        id: factor.id,
        secret_sealed: factor.secretSealed,
        last_used_step: factor.lastUsedStep,
        created_at: factor.createdAt,
      });
    },
    useStep: (userId, step) => useStep(trx, userId, step),
    async deleteTotp(userId) {
      return (await trx(FACTORS).where({ user_id: userId }).delete()) > 0;
    },
    async replaceRecoveryCodes(userId, codeHashes, at) {
      await trx(CODES).where({ user_id: userId }).delete();
      if (codeHashes.length === 0) return;
      await trx(CODES).insert(
        codeHashes.map((hash) => ({
          id: newId(),
          user_id: userId,
          code_hash: hash,
          created_at: at,
          used_at: null,
        })),
      );
    },
    async useRecoveryCode(userId, codeHash, at) {
      const updated = await trx(CODES)
        .where({ user_id: userId, code_hash: codeHash })
        .whereNull('used_at')
        .update({ used_at: at });
      return updated === 1;
    },
    async unusedRecoveryCodes(userId) {
      const unused = await trx(CODES)
        .where({ user_id: userId })
        .whereNull('used_at')
        .count<{ count: number | string }[]>({ count: '*' });
      return Number(unused[0]?.count ?? 0);
    },
    async deleteRecoveryCodes(userId) {
      const unused = await trx(CODES)
        .where({ user_id: userId })
        .whereNull('used_at')
        .count<{ count: number | string }[]>({ count: '*' });
      await trx(CODES).where({ user_id: userId }).delete();
      return Number(unused[0]?.count ?? 0);
    },
    async attempts(userId) {
      const row = await trx(LOCKS).where({ user_id: userId }).first();
      return row ? attemptsFromRow(row) : undefined;
    },
    async saveAttempts(userId, attempts) {
      await trx(LOCKS).where({ user_id: userId }).delete();
      if (!attempts) return;
      await trx(LOCKS).insert({
        user_id: userId,
        failures: attempts.failures,
        window_started_at: attempts.windowStartedAt,
        locked_until: attempts.lockedUntil,
      });
    },
  };
}

/**
 * The knex {@link SecondFactorStore} over `identity_totp_enrolments`,
 * `identity_totp_factors`, `identity_recovery_codes` and
 * `identity_second_factor_locks` (migration 0010).
 *
 * @example
 * const store = createKnexSecondFactorStore({ db, outbox: bus, invalidator });
 */
export function createKnexSecondFactorStore(options: KnexCredentialStoreOptions): SecondFactorStore {
  const { db } = options;
  const platformAdministrator = (userId: string, organizationId?: string) => {
    const query = db('identity_memberships as m')
      .join('identity_organizations as o', 'o.id', 'm.organization_id')
      .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
      .where({ 'm.user_id': userId, 'm.status': 'active', 'o.status': 'active' })
      .andWhere('o.is_platform', true)
      .whereIn('r.role', [...ADMIN_ROLES]);
    if (organizationId !== undefined) query.andWhere('m.organization_id', organizationId);
    return query.first(db.raw('1 as found'));
  };
  return {
    ...knexUnitOfWork(options, secondFactorWrites),
    async totpCheck(userId) {
      const row = (await db(`${FACTORS} as f`)
        .leftJoin(`${LOCKS} as l`, 'l.user_id', 'f.user_id')
        .where('f.user_id', userId)
        .first('f.*', 'l.failures', 'l.window_started_at', 'l.locked_until')) as Record<string, unknown> | undefined;
      if (!row) return undefined;
      const attempts = row.failures === null || row.failures === undefined ? undefined : attemptsFromRow(row);
      return { factor: factorFromRow(row), attempts };
    },
    async useTotpStep(userId, step) {
      return useStep(db, userId, step);
    },
    async clearAttempts(userId) {
      await db(LOCKS).where({ user_id: userId }).delete();
    },
    async status(userId) {
      // One statement: every sign-in asks it (the pipeline's second-step decision).
      const row = (await db
        .select(
          db.raw(`(select count(*) from ${FACTORS} where user_id = ?) as totp`, [userId]),
          db.raw(`(select count(*) from ${CODES} where user_id = ? and used_at is null) as codes`, [userId]),
          db.raw(`(select count(*) from ${PASSKEYS} where user_id = ?) as passkeys`, [userId]),
        )
        .first()) as { totp: number | string; codes: number | string; passkeys: number | string } | undefined;
      return {
        totp: Number(row?.totp ?? 0) > 0,
        recoveryCodesLeft: Number(row?.codes ?? 0),
        passkeys: Number(row?.passkeys ?? 0),
      };
    },
    async passwordHash(userId) {
      const row = await db('identity_users').where({ id: userId, status: 'active' }).first('password_hash');
      return row ? ((row.password_hash as string | null) ?? null) : undefined;
    },
    async isOwner(userId, organizationId) {
      const row = await db('identity_memberships as m')
        .join('identity_organizations as o', 'o.id', 'm.organization_id')
        .join('identity_membership_roles as r', 'r.membership_id', 'm.id')
        .where({ 'm.user_id': userId, 'm.organization_id': organizationId, 'm.status': 'active', 'o.status': 'active' })
        .andWhere('r.role', 'owner')
        .first(db.raw('1 as found'));
      return row !== undefined;
    },
    async isPlatformAdministrator(userId, organizationId) {
      return (await platformAdministrator(userId, organizationId)) !== undefined;
    },
    async isMember(userId, organizationId) {
      return (
        (await db('identity_memberships').where({ user_id: userId, organization_id: organizationId }).first('id')) !== undefined
      );
    },
    async pruneEnrolments(now) {
      return db(ENROLMENTS).where('expires_at', '<=', now).delete();
    },
  };
}
