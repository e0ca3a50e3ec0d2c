import { type Clock, type Logger, newId, type SecretBox, silentLogger, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { type AccountsActor, requireUserId } from '../accounts/actor.js';
import { AccountAuditActions, type AccountAuditContext, auditActorFor, auditRequestFacts } from '../audit/account-actions.js';
import type { PasswordHasher } from '../passwords.js';
import { UserSecondFactorAddedEvent, UserSecondFactorRemovedEvent, UserSecondFactorsResetEvent } from './events.js';
import { createRecoveryCodeHasher, newRecoveryCode, normalizeRecoveryCode, RECOVERY_CODE_COUNT } from './recovery-codes.js';
import type { SecondFactorAttempts, SecondFactorStore, SecondFactorWrites } from './store.js';
import { matchingStep, newTotpSecret, normalizeTotpCode, qrSvg, totpUri } from './totp.js';

/** The user's second factors, as the account API and the sign-in pages read them. */
export interface SecondFactorStatus {
  /** Whether an authenticator app (TOTP) is confirmed. */
  readonly totp: boolean;
  /** Unused recovery codes. */
  readonly recoveryCodesLeft: number;
  /** Registered passkeys (each is a second factor too). */
  readonly passkeys: number;
}

/** A TOTP enrolment begun: what the set-up page shows. The secret is sealed at rest until confirmed. */
export interface TotpEnrolmentStart {
  readonly enrolmentId: string;
  /** The Base32 secret, for typing into an app by hand. */
  readonly secret: string;
  /** `otpauth://totp/...` */
  readonly otpauthUri: string;
  /** The URI's QR code, an SVG document. */
  readonly qrSvg: string;
}

/** What checking a TOTP code found. */
export type TotpVerification = 'ok' | 'wrong' | 'replayed' | 'locked';
/** What using a recovery code (or a password, for re-authentication) found. */
export type RecoveryCodeVerification = 'ok' | 'wrong' | 'locked';

/** The passkeys of a user, when the passkeys feature is composed (they count as second factors). */
export interface PasskeyCount {
  count(userId: string): Promise<number>;
  /** Removes every passkey of the user (an administrator's reset); without it a reset keeps them. */
  removeAllForUser?(userId: string): Promise<unknown>;
}

/**
 * Second factors: TOTP (RFC 6238, SHA-1, 6 digits, 30 s, one step of drift)
 * with its secret sealed at rest, and single-use recovery codes stored
 * hashed. A code works once; 5 misses (TOTP codes, recovery codes,
 * re-authentication passwords) in 5 minutes lock the second step for 5 minutes.
 */
export interface SecondFactorService {
  /** The user's factors. */
  status(userId: string): Promise<SecondFactorStatus>;
  /**
   * Starts an authenticator-app enrolment (ending any other pending one of
   * the user), valid 15 minutes. `label` names the account in the app
   * (`''`: the user's e-mail address).
   *
   * @throws ProblemError `Identity.UserNotFound` for a missing or deactivated user.
   */
  beginTotp(userId: string, label: string): Promise<TotpEnrolmentStart>;
  /**
   * Confirms an enrolment with a first code from the app; the TOTP replaces
   * any previous one, and the code cannot be used again. Returns 10 recovery
   * codes (shown once) when the user had none left, else `null`. Records
   * `identity.totp.added` on the platform trail in the same transaction.
   *
   * @param context who asked and from where, for the audit record (the user by default).
   * @throws ProblemError `SecondFactor.EnrolmentNotFound` (expired, unknown or another user's),
   *   `SecondFactor.InvalidCode`, `SecondFactor.Locked` (429, `Retry-After`).
   */
  confirmTotp(
    userId: string,
    enrolmentId: string,
    code: string,
    context?: AccountAuditContext,
  ): Promise<{ recoveryCodes: string[] | null }>;
  /** Checks a code of the user's app (`replayed`: its time step was already used). */
  verifyTotp(userId: string, code: string): Promise<TotpVerification>;
  /** Uses one of the user's recovery codes (each works once). */
  useRecoveryCode(userId: string, code: string): Promise<RecoveryCodeVerification>;
  /**
   * A new set of 10 recovery codes (shown once); the old set ends. Records
   * `identity.recoveryCodes.regenerated` in the same transaction.
   *
   * @throws ProblemError `SecondFactor.NotEnrolled` when the user has no second factor to recover.
   */
  regenerateRecoveryCodes(userId: string, context?: AccountAuditContext): Promise<string[]>;
  /**
   * Removes the user's authenticator app; without a passkey left, the
   * recovery codes end too. The address gets a security notice. Records
   * `identity.totp.removed` in the same transaction.
   *
   * @throws ProblemError `SecondFactor.NotEnrolled`; `Identity.SecondFactorRequired` (422) when it is
   *   the user's last second factor and an organization of theirs requires MFA.
   */
  removeTotp(userId: string, context?: AccountAuditContext): Promise<void>;
  /**
   * An organization owner's or platform administrator's reset of a member's
   * second factors (lost device): the app, pending set-ups, recovery codes,
   * the lock, and passkeys when the passkeys feature can remove them. The
   * member is told by mail and a SecurityAlert. Records
   * `identity.secondFactors.reset` on the organization's trail (passkeys are
   * removed right after, in a transaction of their own, and named in that record).
   *
   * @param context the audit actor (`auditActorOf(principal)`) and request facts; by default the acting user.
   * @throws ProblemError `Identity.OrganizationNotFound` (404) for an organization the actor cannot reach,
   *   `Auth.Forbidden` (403) for a member who is not an owner (or a platform administrator's factors),
   *   `Identity.MemberNotFound` (404) when the user is no member of the organization.
   */
  resetAll(userId: string, actor: AccountsActor, organizationId: string, context?: AccountAuditContext): Promise<void>;
  /** Re-authentication: checks the user's password, a miss counting toward the lock. */
  verifyPassword(userId: string, password: string): Promise<RecoveryCodeVerification>;
  /** Deletes expired enrolments; returns how many. */
  prune(): Promise<number>;
}

/** Options of {@link createSecondFactorService}. */
export interface SecondFactorServiceOptions {
  readonly store: SecondFactorStore;
  /** Seals TOTP secrets (a `SecretBox` of its own purpose under the server secret). */
  readonly box: SecretBox;
  /** The server secret recovery codes' HMAC key is derived from. */
  readonly secret: string;
  /** The issuer name authenticator apps show (e.g. the public host). */
  readonly issuer: string;
  readonly hasher: PasswordHasher;
  /** Whether an organization of the user requires MFA (the organization policy service). */
  readonly requiresMfaForUser: (userId: string) => Promise<boolean>;
  /** Passkeys, when that feature is composed. */
  readonly passkeys?: () => PasskeyCount | undefined;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

const MINUTE_MS = 60_000;
const ENROLMENT_TTL_MS = 15 * MINUTE_MS;
const FAILURE_WINDOW_MS = 5 * MINUTE_MS;
const LOCK_MS = 5 * MINUTE_MS;
const MAX_FAILURES = 5;
const MAX_LABEL_LENGTH = 254;

const totpAad = (userId: string) => `totp:${userId}`;
const enrolmentAad = (userId: string, enrolmentId: string) => `totp-enrolment:${userId}:${enrolmentId}`;

/** The `SecondFactor.Locked` problem with its `Retry-After`. */
function lockedError(lockedUntil: string | null, now: Date): ProblemError {
  const seconds = lockedUntil ? Math.max(1, Math.ceil((new Date(lockedUntil).getTime() - now.getTime()) / 1000)) : 300;
  return new ProblemError('SecondFactor.Locked', undefined, { headers: { 'retry-after': String(seconds) } });
}

/**
 * Creates the second-factor service.
 *
 * @example
 * const factors = createSecondFactorService({ store, box: createSecretBox(secret, 'idt-totp-secrets'), secret, issuer: 'id.example.com', hasher, requiresMfaForUser });
 * const { enrolmentId, qrSvg } = await factors.beginTotp(userId, 'ada@example.com');
 * const { recoveryCodes } = await factors.confirmTotp(userId, enrolmentId, '123456');
 */
export function createSecondFactorService(options: SecondFactorServiceOptions): SecondFactorService {
  const { store, box } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const hashCode = createRecoveryCodeHasher(options.secret);
  const passkeys = () => options.passkeys?.();
  const passkeyCount = async (userId: string) => (await passkeys()?.count(userId)) ?? 0;

  function lockedAt(attempts: SecondFactorAttempts | undefined, now: Date): boolean {
    return attempts?.lockedUntil != null && new Date(attempts.lockedUntil).getTime() > now.getTime();
  }

  /** Counts a miss; answers whether it locked the second step. */
  async function miss(tx: SecondFactorWrites, userId: string, now: Date): Promise<'wrong' | 'locked'> {
    const previous = await tx.attempts(userId);
    const fresh = !previous || now.getTime() - new Date(previous.windowStartedAt).getTime() >= FAILURE_WINDOW_MS;
    const failures = (fresh ? 0 : previous.failures) + 1;
    const windowStartedAt = fresh ? now.toISOString() : previous.windowStartedAt;
    if (failures >= MAX_FAILURES) {
      await tx.saveAttempts(userId, {
        failures: 0,
        windowStartedAt: now.toISOString(),
        lockedUntil: new Date(now.getTime() + LOCK_MS).toISOString(),
      });
      logger.warn('second step locked after repeated misses', { userId });
      return 'locked';
    }
    await tx.saveAttempts(userId, { failures, windowStartedAt, lockedUntil: null });
    return 'wrong';
  }

  /** A set of recovery codes: the codes to show and their hashes to store. */
  function newCodes(userId: string): { codes: string[]; hashes: string[] } {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    return { codes, hashes: codes.map((code) => hashCode(userId, normalizeRecoveryCode(code) as string)) };
  }

  return {
    status: (userId) => store.status(userId),

    async beginTotp(userId, label) {
      const now = clock.now();
      const secret = newTotpSecret();
      const enrolmentId = newId(now.getTime());
      const begun = await store.transaction(async (tx) => {
        const user = await tx.lockUser(userId);
        if (user?.status !== 'active') return undefined;
        await tx.insertEnrolment({
          id: enrolmentId,
          userId,
          secretSealed: box.seal(secret, enrolmentAad(userId, enrolmentId)),
          createdAt: now.toISOString(),
          expiresAt: new Date(now.getTime() + ENROLMENT_TTL_MS).toISOString(),
        });
        return user;
      });
      if (!begun) throw new ProblemError('Identity.UserNotFound');
      const otpauthUri = totpUri(options.issuer, label.trim().slice(0, MAX_LABEL_LENGTH) || begun.email, secret);
      return { enrolmentId, secret, otpauthUri, qrSvg: await qrSvg(otpauthUri) };
    },

    async confirmTotp(userId, enrolmentId, code, context = {}) {
      const now = clock.now();
      const normalized = normalizeTotpCode(code);
      const outcome = await store.transaction(async (tx) => {
        const user = await tx.lockUser(userId);
        if (!user) return { kind: 'missing' as const };
        const attempts = await tx.attempts(userId);
        if (lockedAt(attempts, now)) return { kind: 'locked' as const, lockedUntil: attempts?.lockedUntil ?? null };
        const enrolment = await tx.findEnrolment(userId, enrolmentId, now.toISOString());
        if (!enrolment) return { kind: 'missing' as const };
        const secret = box.open(enrolment.secretSealed, enrolmentAad(userId, enrolment.id));
        const step = normalized === undefined ? undefined : await matchingStep(secret, normalized, now);
        if (step === undefined) {
          const missed = await miss(tx, userId, now);
          return missed === 'locked'
            ? { kind: 'locked' as const, lockedUntil: new Date(now.getTime() + LOCK_MS).toISOString() }
            : { kind: 'wrong' as const };
        }
        await tx.deleteEnrolments(userId);
        await tx.putTotp({
          id: newId(now.getTime()),
          userId,
          secretSealed: box.seal(secret, totpAad(userId)),
          // The confirming code is used: it cannot sign in as well.
          lastUsedStep: step,
          createdAt: now.toISOString(),
        });
        await tx.saveAttempts(userId, undefined);
        const at = now.toISOString();
        const codes = (await tx.unusedRecoveryCodes(userId)) === 0 ? newCodes(userId) : undefined;
        if (codes) await tx.replaceRecoveryCodes(userId, codes.hashes, at);
        await tx.publish([
          { event: UserSecondFactorAddedEvent, payload: { userId, factor: 'totp', addedAt: at } },
          ...(codes ? [{ event: UserSecondFactorAddedEvent, payload: { userId, factor: 'recovery-codes', addedAt: at } }] : []),
        ]);
        await tx.audit?.([
          {
            action: AccountAuditActions.totpAdded.action,
            organizationId: null,
            actor: auditActorFor(context, userId, user.email),
            target: { type: 'user', id: userId, display: user.email },
            ...auditRequestFacts(context),
            metadata: { newRecoveryCodeCount: codes ? codes.codes.length : 0 },
          },
        ]);
        return { kind: 'ok' as const, recoveryCodes: codes?.codes ?? null };
      });
      switch (outcome.kind) {
        case 'ok':
          return { recoveryCodes: outcome.recoveryCodes };
        case 'missing':
          throw new ProblemError('SecondFactor.EnrolmentNotFound');
        case 'locked':
          throw lockedError(outcome.lockedUntil, now);
        default:
          throw new ProblemError('SecondFactor.InvalidCode', 'The code is wrong. Enter the code your app shows now.');
      }
    },

    async verifyTotp(userId, code) {
      const now = clock.now();
      const normalized = normalizeTotpCode(code);
      // The usual case without a transaction (every sign-in with a second step takes it): one read, then the
      // step's compare-and-set, which alone keeps a code from working twice. Misses, locks and users without
      // a factor take the locked path below, which counts failures one at a time.
      const check = normalized === undefined ? undefined : await store.totpCheck(userId);
      if (check && normalized !== undefined && !lockedAt(check.attempts, now)) {
        const step = await matchingStep(box.open(check.factor.secretSealed, totpAad(userId)), normalized, now);
        if (step !== undefined) {
          if (!(await store.useTotpStep(userId, step))) return 'replayed';
          if (check.attempts) await store.clearAttempts(userId);
          return 'ok';
        }
      }
      return store.transaction(async (tx): Promise<TotpVerification> => {
        if (!(await tx.lockUser(userId))) return 'wrong';
        if (lockedAt(await tx.attempts(userId), now)) return 'locked';
        const factor = await tx.findTotp(userId);
        const step =
          factor && normalized !== undefined
            ? await matchingStep(box.open(factor.secretSealed, totpAad(userId)), normalized, now)
            : undefined;
        if (step === undefined) return miss(tx, userId, now);
        if (!(await tx.useStep(userId, step))) return 'replayed';
        await tx.saveAttempts(userId, undefined);
        return 'ok';
      });
    },

    async useRecoveryCode(userId, code) {
      const now = clock.now();
      const normalized = normalizeRecoveryCode(code);
      return store.transaction(async (tx): Promise<RecoveryCodeVerification> => {
        if (!(await tx.lockUser(userId))) return 'wrong';
        if (lockedAt(await tx.attempts(userId), now)) return 'locked';
        if (normalized === undefined || !(await tx.useRecoveryCode(userId, hashCode(userId, normalized), now.toISOString()))) {
          return miss(tx, userId, now);
        }
        await tx.saveAttempts(userId, undefined);
        logger.info('recovery code used', { userId });
        return 'ok';
      });
    },

    async regenerateRecoveryCodes(userId, context = {}) {
      const [status, keys] = await Promise.all([store.status(userId), passkeyCount(userId)]);
      if (!status.totp && keys === 0) {
        throw new ProblemError('SecondFactor.NotEnrolled', 'Add an authenticator app or a passkey before making recovery codes.');
      }
      const now = clock.now().toISOString();
      const { codes, hashes } = newCodes(userId);
      const made = await store.transaction(async (tx) => {
        const user = await tx.lockUser(userId);
        if (!user) return false;
        await tx.replaceRecoveryCodes(userId, hashes, now);
        await tx.publish([{ event: UserSecondFactorAddedEvent, payload: { userId, factor: 'recovery-codes', addedAt: now } }]);
        await tx.audit?.([
          {
            action: AccountAuditActions.recoveryCodesRegenerated.action,
            organizationId: null,
            actor: auditActorFor(context, userId, user.email),
            target: { type: 'user', id: userId, display: user.email },
            ...auditRequestFacts(context),
            metadata: { newRecoveryCodeCount: codes.length },
          },
        ]);
        return true;
      });
      if (!made) throw new ProblemError('Identity.UserNotFound');
      return codes;
    },

    async removeTotp(userId, context = {}) {
      const [status, keys] = await Promise.all([store.status(userId), passkeyCount(userId)]);
      if (!status.totp) throw new ProblemError('SecondFactor.NotEnrolled');
      if (keys === 0 && (await options.requiresMfaForUser(userId))) throw new ProblemError('Identity.SecondFactorRequired');
      const now = clock.now().toISOString();
      const removed = await store.transaction(async (tx) => {
        const user = await tx.lockUser(userId);
        if (!user || !(await tx.deleteTotp(userId))) return false;
        await tx.deleteEnrolments(userId);
        // Recovery codes recover a second step; with no factor left there is none.
        if (keys === 0) await tx.deleteRecoveryCodes(userId);
        await tx.publish([
          { event: UserSecondFactorRemovedEvent, payload: { userId, email: user.email, factor: 'totp', removedAt: now } },
        ]);
        await tx.audit?.([
          {
            action: AccountAuditActions.totpRemoved.action,
            organizationId: null,
            actor: auditActorFor(context, userId, user.email),
            target: { type: 'user', id: userId, display: user.email },
            ...auditRequestFacts(context),
            // Without a passkey left, the recovery codes end with the app.
            metadata: { removed: keys === 0 ? ['totp', 'recovery-codes'] : ['totp'] },
          },
        ]);
        return true;
      });
      if (!removed) throw new ProblemError('SecondFactor.NotEnrolled');
    },

    async resetAll(userId, actor, organizationId, context = {}) {
      const actorId = requireUserId(actor);
      const orgId = organizationId.toLowerCase();
      const target = userId.toLowerCase();
      const platformAdministrator =
        actor.organizationId !== null && (await store.isPlatformAdministrator(actorId, actor.organizationId));
      if (actor.organizationId === orgId && !platformAdministrator) {
        if (!(await store.isOwner(actorId, orgId))) {
          throw new ProblemError('Auth.Forbidden', "Only the organization's owners can reset a member's second factors.");
        }
      } else if (!platformAdministrator) {
        throw new ProblemError('Identity.OrganizationNotFound');
      }
      if (!(await store.isMember(target, orgId))) throw new ProblemError('Identity.MemberNotFound');
      if (!platformAdministrator && (await store.isPlatformAdministrator(target))) {
        throw new ProblemError(
          'Auth.Forbidden',
          "Only a platform administrator can reset a platform administrator's second factors.",
        );
      }
      const now = clock.now().toISOString();
      const keys = passkeys();
      const hadPasskeys = keys?.removeAllForUser ? (await keys.count(target)) > 0 : false;
      const reset = await store.transaction(async (tx) => {
        const user = await tx.lockUser(target);
        if (!user) return undefined;
        const hadTotp = await tx.deleteTotp(target);
        await tx.deleteEnrolments(target);
        const codes = await tx.deleteRecoveryCodes(target);
        await tx.saveAttempts(target, undefined);
        // The reset an administrator asked for is recorded even when the member had nothing left to reset.
        await tx.audit?.([
          {
            action: AccountAuditActions.secondFactorsReset.action,
            organizationId: orgId,
            actor: auditActorFor(context, actorId),
            target: { type: 'user', id: target, display: user.email },
            ...auditRequestFacts(context),
            metadata: {
              removed: [
                ...(hadTotp ? ['totp'] : []),
                ...(codes > 0 ? ['recovery-codes'] : []),
                ...(hadPasskeys ? ['passkeys'] : []),
              ],
              unusedRecoveryCodeCount: codes,
              byPlatformAdministrator: platformAdministrator,
            },
          },
        ]);
        if (!hadTotp && codes === 0 && !hadPasskeys) return false;
        await tx.publish([
          {
            event: UserSecondFactorsResetEvent,
            payload: { userId: target, email: user.email, organizationId: orgId, resetByUserId: actorId, resetAt: now },
          },
        ]);
        return true;
      });
      if (reset === undefined) throw new ProblemError('Identity.MemberNotFound');
      if (hadPasskeys) await keys?.removeAllForUser?.(target);
      logger.info("member's second factors reset", { userId: target, organizationId: orgId, by: actorId, changed: reset });
    },

    async verifyPassword(userId, password) {
      const now = clock.now();
      const hash = await store.passwordHash(userId);
      // Verify outside the transaction (argon2 is slow); only the miss is written under the lock.
      const matches = typeof hash === 'string' && password.length <= 1024 && (await options.hasher.verify(hash, password));
      return store.transaction(async (tx): Promise<RecoveryCodeVerification> => {
        if (!(await tx.lockUser(userId))) return 'wrong';
        if (lockedAt(await tx.attempts(userId), now)) return 'locked';
        if (!matches) return miss(tx, userId, now);
        return 'ok';
      });
    },

    prune: () => store.pruneEnrolments(clock.now().toISOString()),
  };
}
