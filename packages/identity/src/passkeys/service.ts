import { randomBytes } from 'node:crypto';
import { type Clock, constantTimeEqual, isUuid, type Logger, newId, sha256Hex, silentLogger, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';
import { z } from 'zod';
import { AccountAuditActions, type AccountAuditContext, auditActorFor, auditRequestFacts } from '../audit/account-actions.js';
import { SecondFactorCodes } from '../factors/problems.js';
import { UserPasskeyAddedEvent, UserPasskeyRemovedEvent } from './events.js';
import { PasskeyCodes } from './problems.js';
import type { PasskeyChallengePurpose, PasskeyStore, StoredPasskey } from './store.js';

/** `@simplewebauthn/server`, loaded on the first passkey operation (it adds about 250 ms to start-up). */
let webauthnLibrary: Promise<typeof import('@simplewebauthn/server')> | undefined;
function webauthn(): Promise<typeof import('@simplewebauthn/server')> {
  webauthnLibrary ??= import('@simplewebauthn/server');
  return webauthnLibrary;
}

/** A base64url value of at most `max` characters. */
const base64url = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[A-Za-z0-9_-]+$/, 'Expected a base64url value.');

const Transports = z.array(z.string().max(32)).max(10);

/** The name a user gives a passkey: 1 to 64 printable characters. */
export const PasskeyNameSchema = z
  .string({ error: 'Enter a name for the passkey.' })
  .trim()
  .min(1, 'Enter a name for the passkey.')
  .max(64, 'A passkey name has at most 64 characters.')
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused.
  .regex(/^[^\u0000-\u001f\u007f]*$/, 'A passkey name cannot contain control characters.')
  .meta({ description: 'A name to recognise the passkey by (e.g. "Work laptop").', example: 'Work laptop' });

/**
 * What a browser's `PublicKeyCredential.toJSON()` answers for
 * `navigator.credentials.create()` (WebAuthn's `RegistrationResponseJSON`).
 */
export const RegistrationResponseSchema = z.object({
  id: base64url(1400),
  rawId: base64url(1400),
  type: z.literal('public-key'),
  response: z.object({
    clientDataJSON: base64url(4096),
    attestationObject: base64url(12_000),
    authenticatorData: base64url(12_000).optional(),
    transports: Transports.optional(),
    publicKeyAlgorithm: z.number().int().optional(),
    publicKey: base64url(4096).optional(),
  }),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
});

/**
 * What a browser's `PublicKeyCredential.toJSON()` answers for
 * `navigator.credentials.get()` (WebAuthn's `AuthenticationResponseJSON`).
 */
export const AuthenticationResponseSchema = z.object({
  id: base64url(1400),
  rawId: base64url(1400),
  type: z.literal('public-key'),
  response: z.object({
    clientDataJSON: base64url(4096),
    authenticatorData: base64url(4096),
    signature: base64url(2048),
    userHandle: base64url(128).optional(),
  }),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
});

/** The body of `POST /v1/identity/account/passkeys`: the browser's registration response and a name. */
export const RegisterPasskeyInput = RegistrationResponseSchema.extend({ name: PasskeyNameSchema.optional() });
/** Input of {@link PasskeyService.register}. */
export type RegisterPasskeyInput = z.input<typeof RegisterPasskeyInput>;

/** The body of `PATCH /v1/identity/account/passkeys/{id}`. */
export const RenamePasskeyInput = z.object({ name: PasskeyNameSchema });
/** Input of {@link PasskeyService.rename}. */
export type RenamePasskeyInput = z.input<typeof RenamePasskeyInput>;

/** A passkey as its owner sees it (never its key). */
export const PasskeyRecord = z.object({
  id: z.uuid(),
  name: z.string(),
  createdAt: z.iso.datetime(),
  lastUsedAt: z.iso.datetime().nullable(),
  deviceType: z
    .enum(['singleDevice', 'multiDevice'])
    .meta({ description: '`singleDevice`: bound to one authenticator; `multiDevice`: may be synced (e.g. a password manager).' }),
  backedUp: z.boolean().meta({ description: 'Whether the authenticator reported the passkey as backed up.' }),
  transports: z.array(z.string()),
});
/** A passkey as its owner sees it. */
export type PasskeyRecord = z.infer<typeof PasskeyRecord>;

/** What a challenge is bound to: the sign-in interaction, or the account's session. */
export type PasskeyBinding = { readonly interaction: string } | { readonly session: string };

/** A verified passkey assertion. */
export interface PasskeyAuthentication {
  readonly userId: string;
  readonly passkeyId: string;
  /**
   * RFC 8176 methods: `hwk` for a device-bound passkey, `swk` for one that
   * may be or is backed up (synced), and `mfa`: the authenticator verified
   * the user (PIN or biometrics) besides holding the key.
   */
  readonly amr: readonly string[];
}

/** Whether the user must keep a second factor, and whether they have one besides passkeys. */
export interface PasskeySecondFactorPolicy {
  /** Whether an organization the user belongs to requires MFA. */
  requiresMfa(userId: string): Promise<boolean>;
  /** Whether the user has a TOTP authenticator. */
  hasTotp(userId: string): Promise<boolean>;
}

/**
 * Passkeys (WebAuthn through `@simplewebauthn/server`): registration with
 * user verification required and resident keys preferred, discoverable
 * sign-in (first factor) and sign-in with the user's own passkeys (second
 * factor), list, rename, remove. Challenges are kept server-side (as
 * SHA-256), bound to the sign-in interaction or the account's session,
 * single use and valid 5 minutes.
 */
export interface PasskeyService {
  /** The relying party id: the issuer's host. */
  readonly rpId: string;
  /** The origins a ceremony may come from: the issuer's (and the sign-in pages', when elsewhere). */
  readonly origins: readonly string[];
  /**
   * Options for `navigator.credentials.create()` for a signed-in user, bound
   * to the session (a newer call replaces the challenge).
   *
   * @throws ProblemError `Passkey.LimitReached` (422) at 20 passkeys; UnauthorizedError-like `Auth.Unauthenticated` for a missing user.
   */
  registrationOptions(userId: string, sessionId: string): Promise<PublicKeyCredentialCreationOptionsJSON>;
  /**
   * Verifies the browser's registration response against the session's
   * challenge (used up whatever the outcome) and stores the passkey;
   * publishes `UserPasskeyAddedEvent` and records `identity.passkey.added`.
   *
   * @param context who asked and from where, for the audit record (the user by default).
   * @throws ProblemError `Passkey.ChallengeExpired`, `Passkey.Rejected`, `Validation.Failed` (400),
   *   `Passkey.AlreadyRegistered` (409), `Passkey.LimitReached` (422).
   */
  register(userId: string, sessionId: string, input: RegisterPasskeyInput, context?: AccountAuditContext): Promise<PasskeyRecord>;
  /**
   * Options for `navigator.credentials.get()`: without `userId` a
   * discoverable sign-in (no `allowCredentials`; any user's passkey), with
   * it the user's passkeys (second factor). A newer call for the same
   * binding replaces the challenge.
   */
  authenticationOptions(binding: PasskeyBinding, userId?: string | null): Promise<PublicKeyCredentialRequestOptionsJSON>;
  /**
   * Verifies an assertion against the binding's challenge (used up whatever
   * the outcome): the passkey must exist (and be `userId`'s when given), its
   * user active, the origin and RP id right, the user verified, the counter
   * moving forward.
   *
   * @throws ProblemError `Passkey.ChallengeExpired`, `Passkey.Rejected`, `Validation.Failed` (400).
   */
  authenticate(binding: PasskeyBinding, response: unknown, userId?: string | null): Promise<PasskeyAuthentication>;
  /** The user's passkeys, oldest first. */
  list(userId: string): Promise<PasskeyRecord[]>;
  /** How many passkeys the user has. */
  count(userId: string): Promise<number>;
  /**
   * Renames one of the user's passkeys and records `identity.passkey.renamed`.
   *
   * @throws ProblemError `Passkey.NotFound` (404), `Validation.Failed` (400).
   */
  rename(userId: string, passkeyId: string, input: RenamePasskeyInput, context?: AccountAuditContext): Promise<PasskeyRecord>;
  /**
   * Removes one of the user's passkeys; publishes `UserPasskeyRemovedEvent`
   * and records `identity.passkey.removed`.
   *
   * @throws ProblemError `Passkey.NotFound` (404), `Identity.SecondFactorRequired` (422) for the
   *   last second factor of a user whose organization requires MFA.
   */
  remove(userId: string, passkeyId: string, context?: AccountAuditContext): Promise<void>;
  /**
   * Removes every passkey of the user (an administrator's reset of their
   * second factors); publishes `UserPasskeyRemovedEvent` for each. Records
   * nothing: the reset's own record (`identity.secondFactors.reset`) names them.
   *
   * @returns how many were removed.
   */
  removeAllForUser(userId: string): Promise<number>;
  /** Deletes expired challenges; returns how many. */
  prune(): Promise<number>;
}

/** Options of {@link createPasskeyService}. */
export interface PasskeyServiceOptions {
  readonly store: PasskeyStore;
  /** The issuer (public base URL): its host is the RP id, its origin the expected origin. */
  readonly issuer: string;
  /** Other URLs whose origins may run ceremonies (the sign-in pages' `authUrl`), under the same RP id. */
  readonly otherOrigins?: readonly string[];
  /** The relying party's name shown by authenticators; the issuer's host by default. */
  readonly rpName?: string;
  /** The last-factor rule; without it removal is never refused. */
  readonly secondFactors?: PasskeySecondFactorPolicy;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** How long a challenge works; 5 minutes by default. */
  readonly challengeLifetimeMs?: number;
}

const MAX_PASSKEYS = 20;
// Registering the codes this service throws (the imports are their registration).
void PasskeyCodes;
void SecondFactorCodes;

function bindingKey(binding: PasskeyBinding): string {
  return 'interaction' in binding ? `interaction:${binding.interaction}` : `session:${binding.session}`;
}

/** The WebAuthn user handle of a user: the 16 bytes of their id (no personal data). */
function userHandleOf(userId: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(Buffer.from(userId.replace(/-/g, ''), 'hex'));
}

/** The RFC 8176 methods a passkey stands for (see {@link PasskeyAuthentication.amr}). */
export function passkeyAmr(passkey: Pick<StoredPasskey, 'deviceType' | 'backedUp'>): string[] {
  return [passkey.deviceType === 'singleDevice' && !passkey.backedUp ? 'hwk' : 'swk', 'mfa'];
}

function recordOf(passkey: StoredPasskey): PasskeyRecord {
  return {
    id: passkey.id,
    name: passkey.name,
    createdAt: passkey.createdAt,
    lastUsedAt: passkey.lastUsedAt,
    deviceType: passkey.deviceType,
    backedUp: passkey.backedUp,
    transports: [...passkey.transports],
  };
}

/**
 * Creates the passkey service.
 *
 * @example
 * const passkeys = createPasskeyService({ store, issuer: 'https://id.example.com', clock });
 * const options = await passkeys.authenticationOptions({ interaction: uid });
 * const { userId, amr } = await passkeys.authenticate({ interaction: uid }, browserResponse);
 */
export function createPasskeyService(options: PasskeyServiceOptions): PasskeyService {
  const { store } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const lifetimeMs = options.challengeLifetimeMs ?? 5 * 60_000;
  const issuer = new URL(options.issuer);
  const rpId = issuer.hostname;
  const origins = [...new Set([issuer.origin, ...(options.otherOrigins ?? []).map((url) => new URL(url).origin)])];
  const rpName = options.rpName ?? issuer.host;

  /** A new challenge for `binding`, stored as its SHA-256; the base64url value for the options. */
  async function issueChallenge(binding: PasskeyBinding, purpose: PasskeyChallengePurpose, userId: string | null) {
    const bytes = new Uint8Array(randomBytes(32));
    const now = clock.now();
    await store.replaceChallenge({
      id: newId(),
      binding: bindingKey(binding),
      purpose,
      userId,
      challengeHash: sha256Hex(Buffer.from(bytes).toString('base64url')),
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + lifetimeMs).toISOString(),
    });
    return bytes;
  }

  /** Uses up the binding's challenge: it must be waiting, unexpired, and made for `userId`. */
  async function takeChallenge(binding: PasskeyBinding, purpose: PasskeyChallengePurpose, userId: string | null) {
    const challenge = await store.consumeChallenge(bindingKey(binding), purpose);
    if (!challenge || new Date(challenge.expiresAt).getTime() <= clock.now().getTime()) {
      throw new ProblemError('Passkey.ChallengeExpired');
    }
    if (challenge.userId !== userId) throw new ProblemError('Passkey.Rejected');
    return (value: string) => constantTimeEqual(sha256Hex(value), challenge.challengeHash);
  }

  function rejected(reason: string, context: Record<string, unknown>): never {
    logger.info('passkey refused', { reason, ...context });
    throw new ProblemError('Passkey.Rejected');
  }

  async function activeUser(userId: string) {
    const user = await store.findUser(userId);
    if (user?.status !== 'active') throw new ProblemError('Auth.Unauthenticated', 'The account is missing or deactivated.');
    return user;
  }

  return {
    rpId,
    origins,

    async registrationOptions(userId, sessionId) {
      const user = await activeUser(userId);
      const existing = await store.list(userId);
      if (existing.length >= MAX_PASSKEYS) throw new ProblemError('Passkey.LimitReached');
      const challenge = await issueChallenge({ session: sessionId }, 'registration', userId);
      const displayName = `${user.firstName} ${user.lastName}`.trim() || user.email;
      return (await webauthn()).generateRegistrationOptions({
        rpName,
        rpID: rpId,
        userName: user.email,
        userID: userHandleOf(userId),
        userDisplayName: displayName,
        challenge,
        timeout: lifetimeMs,
        attestationType: 'none',
        excludeCredentials: existing.map((passkey) => ({ id: passkey.credentialId, transports: [...passkey.transports] })),
        authenticatorSelection: { residentKey: 'preferred', userVerification: 'required' },
      });
    },

    async register(userId, sessionId, input, context = {}) {
      const parsed = RegisterPasskeyInput.parse(input);
      const user = await activeUser(userId);
      const matches = await takeChallenge({ session: sessionId }, 'registration', userId);
      let verified: Awaited<ReturnType<typeof import('@simplewebauthn/server').verifyRegistrationResponse>>;
      try {
        verified = await (await webauthn()).verifyRegistrationResponse({
          response: parsed as RegistrationResponseJSON,
          expectedChallenge: matches,
          expectedOrigin: origins,
          expectedRPID: rpId,
          requireUserVerification: true,
        });
      } catch (error) {
        return rejected(error instanceof Error ? error.message : 'unreadable response', { userId, ceremony: 'registration' });
      }
      if (!verified.verified) return rejected('not verified', { userId, ceremony: 'registration' });
      const info = verified.registrationInfo;
      const now = clock.now().toISOString();
      const passkey: StoredPasskey = {
        id: newId(),
        userId,
        credentialId: info.credential.id,
        publicKey: Buffer.from(info.credential.publicKey).toString('base64url'),
        counter: info.credential.counter,
        transports: (parsed.response.transports ?? []).slice(0, 10),
        deviceType: info.credentialDeviceType,
        backedUp: info.credentialBackedUp,
        aaguid: info.aaguid,
        name: parsed.name ?? `Passkey added ${now.slice(0, 10)}`,
        createdAt: now,
        lastUsedAt: null,
      };
      await store.transaction(async (tx) => {
        if (!(await tx.lockActiveUser(userId)))
          throw new ProblemError('Auth.Unauthenticated', 'The account is missing or deactivated.');
        if ((await tx.count(userId)) >= MAX_PASSKEYS) throw new ProblemError('Passkey.LimitReached');
        if (!(await tx.insert(passkey))) throw new ProblemError('Passkey.AlreadyRegistered');
        await tx.publish([
          {
            event: UserPasskeyAddedEvent,
            payload: { userId, passkeyId: passkey.id, name: passkey.name, deviceType: passkey.deviceType, addedAt: now },
          },
        ]);
        await tx.audit?.([
          {
            action: AccountAuditActions.passkeyAdded.action,
            organizationId: null,
            actor: auditActorFor(context, userId, user.email),
            target: { type: 'passkey', id: passkey.id, display: passkey.name },
            ...auditRequestFacts(context),
            metadata: { userId, deviceType: passkey.deviceType, backedUp: passkey.backedUp, aaguid: passkey.aaguid },
          },
        ]);
      });
      logger.info('passkey registered', { userId, passkeyId: passkey.id, deviceType: passkey.deviceType });
      return recordOf(passkey);
    },

    async authenticationOptions(binding, userId = null) {
      const allow = userId ? await store.list(userId) : [];
      const challenge = await issueChallenge(binding, 'authentication', userId);
      return (await webauthn()).generateAuthenticationOptions({
        rpID: rpId,
        challenge,
        timeout: lifetimeMs,
        userVerification: 'required',
        ...(userId
          ? { allowCredentials: allow.map((passkey) => ({ id: passkey.credentialId, transports: [...passkey.transports] })) }
          : {}),
      });
    },

    async authenticate(binding, response, userId = null) {
      const parsed = AuthenticationResponseSchema.parse(response);
      const matches = await takeChallenge(binding, 'authentication', userId);
      const passkey = await store.findByCredentialId(parsed.id);
      const context = { ceremony: 'authentication', expectedUserId: userId };
      if (!passkey) return rejected('unknown credential', context);
      // A second factor must be the signing-in user's own passkey.
      if (userId !== null && passkey.userId !== userId) return rejected("another user's passkey", context);
      const handle = parsed.response.userHandle;
      if (handle !== undefined && handle !== Buffer.from(userHandleOf(passkey.userId)).toString('base64url')) {
        return rejected('user handle does not match', context);
      }
      const user = await store.findUser(passkey.userId);
      if (user?.status !== 'active') return rejected('account deactivated', context);
      let verified: Awaited<ReturnType<typeof import('@simplewebauthn/server').verifyAuthenticationResponse>>;
      try {
        verified = await (await webauthn()).verifyAuthenticationResponse({
          response: parsed as AuthenticationResponseJSON,
          expectedChallenge: matches,
          expectedOrigin: origins,
          expectedRPID: rpId,
          credential: {
            id: passkey.credentialId,
            publicKey: new Uint8Array(Buffer.from(passkey.publicKey, 'base64url')),
            counter: passkey.counter,
            transports: [...passkey.transports],
          },
          requireUserVerification: true,
        });
      } catch (error) {
        return rejected(error instanceof Error ? error.message : 'unreadable response', { ...context, passkeyId: passkey.id });
      }
      if (!verified.verified) return rejected('not verified', { ...context, passkeyId: passkey.id });
      const info = verified.authenticationInfo;
      const use = {
        counter: info.newCounter,
        backedUp: info.credentialBackedUp,
        deviceType: info.credentialDeviceType,
        at: clock.now().toISOString(),
      };
      // Compare-and-set on the counter: a cloned authenticator racing the original loses.
      const recorded = await store.transaction((tx) => tx.recordUse(passkey.id, passkey.counter, use));
      if (!recorded) return rejected('counter changed meanwhile', { ...context, passkeyId: passkey.id });
      logger.info('passkey sign-in', { userId: passkey.userId, passkeyId: passkey.id });
      return {
        userId: passkey.userId,
        passkeyId: passkey.id,
        amr: passkeyAmr({ deviceType: use.deviceType, backedUp: use.backedUp }),
      };
    },

    async list(userId) {
      return (await store.list(userId)).map(recordOf);
    },

    count: (userId) => store.count(userId),

    async rename(userId, passkeyId, input, context = {}) {
      const { name } = RenamePasskeyInput.parse(input);
      if (!isUuid(passkeyId)) throw new ProblemError('Passkey.NotFound');
      const id = passkeyId.toLowerCase();
      const before = (await store.list(userId)).find((passkey) => passkey.id === id);
      if (!before) throw new ProblemError('Passkey.NotFound');
      const renamed = await store.transaction(async (tx) => {
        if (!(await tx.rename(userId, id, name))) return false;
        await tx.audit?.([
          {
            action: AccountAuditActions.passkeyRenamed.action,
            organizationId: null,
            actor: auditActorFor(context, userId),
            target: { type: 'passkey', id, display: name },
            ...auditRequestFacts(context),
            metadata: { userId, from: before.name, to: name },
          },
        ]);
        return true;
      });
      const found = renamed ? (await store.list(userId)).find((passkey) => passkey.id === id) : undefined;
      if (!found) throw new ProblemError('Passkey.NotFound');
      return recordOf(found);
    },

    async remove(userId, passkeyId, context = {}) {
      if (!isUuid(passkeyId)) throw new ProblemError('Passkey.NotFound');
      const id = passkeyId.toLowerCase();
      const policy = options.secondFactors;
      const [requiresMfa, hasTotp] = policy
        ? await Promise.all([policy.requiresMfa(userId), policy.hasTotp(userId)])
        : [false, false];
      const existing = (await store.list(userId)).find((passkey) => passkey.id === id);
      if (!existing) throw new ProblemError('Passkey.NotFound');
      const now = clock.now().toISOString();
      await store.transaction(async (tx) => {
        await tx.lockActiveUser(userId);
        // Under the user's lock: two removals of the last two passkeys cannot both pass.
        if (requiresMfa && !hasTotp && (await tx.count(userId)) <= 1) throw new ProblemError('Identity.SecondFactorRequired');
        if (!(await tx.remove(userId, id))) throw new ProblemError('Passkey.NotFound');
        await tx.publish([{ event: UserPasskeyRemovedEvent, payload: { userId, passkeyId: id, removedAt: now } }]);
        await tx.audit?.([
          {
            action: AccountAuditActions.passkeyRemoved.action,
            organizationId: null,
            actor: auditActorFor(context, userId),
            target: { type: 'passkey', id, display: existing.name },
            ...auditRequestFacts(context),
            metadata: { userId },
          },
        ]);
      });
      logger.info('passkey removed', { userId, passkeyId: id });
    },

    async removeAllForUser(userId) {
      const now = clock.now().toISOString();
      const removed = await store.transaction(async (tx) => {
        const ids = await tx.removeAll(userId);
        await tx.publish(
          ids.map((passkeyId) => ({ event: UserPasskeyRemovedEvent, payload: { userId, passkeyId, removedAt: now } })),
        );
        return ids;
      });
      if (removed.length > 0) logger.info('passkeys removed by a reset', { userId, count: removed.length });
      return removed.length;
    },

    prune() {
      return store.prune(clock.now().toISOString());
    },
  };
}
