import { type Clock, createThrottle, type Logger, newId, randomToken, sha256Hex, silentLogger, systemClock } from '@idt/core';
import { ProblemError, ValidationProblem } from '@idt/problem';
import { z } from 'zod';
import { CacheNamespaces } from '../access/cache-namespaces.js';
import type { ApiKeyAccess, ApiKeyLookup } from '../access/store.js';
import { AccountAuditActions, type AccountAuditContext, auditActorFor, auditRequestFacts } from '../audit/account-actions.js';
import { permissionsForScopes, SCOPE_CATALOG, scopeDefinition, scopesWithin } from '../authorization/scopes.js';
import type { ApiKeyStore, StoredApiKey } from './store.js';

/** The prefix of every API key. */
export const API_KEY_PREFIX = 'sk_live_';

/** How many characters of a key are kept for display. */
export const API_KEY_DISPLAY_LENGTH = 16;

const API_SCOPES = new Set(SCOPE_CATALOG.filter((entry) => entry.kind === 'api').map((entry) => entry.scope));
const API_KEY_FORMAT = /^sk_live_[A-Za-z0-9_-]{43}$/;

/** The body of `POST /v1/identity/auth/keys`. */
export const CreateApiKeyInput = z.object({
  name: z
    .string({ error: 'Enter a name.' })
    .trim()
    .min(1, 'Enter a name.')
    .max(100, 'A name has at most 100 characters.')
    .regex(/^[^\p{Cc}]*$/u, 'A name cannot contain control characters.'),
  scopes: z
    .array(z.string(), { error: 'Scopes are a list of scope names.' })
    .min(1, 'Choose at least one scope, or leave scopes out for the default ones.')
    .max(50, 'Choose at most 50 scopes.')
    .superRefine((scopes, ctx) => {
      const unknown = scopes.filter((scope) => !API_SCOPES.has(scope));
      if (unknown.length > 0) ctx.addIssue({ code: 'custom', message: `Unknown API scope: ${unknown.join(', ')}.` });
    })
    .transform((scopes) => [...new Set(scopes)])
    .optional()
    .meta({ description: 'API scopes; by default every non-platform scope within your permissions.' }),
  expiresAt: z.iso
    .datetime({ offset: true, error: 'Use an ISO 8601 date and time, e.g. 2030-01-01T00:00:00Z.' })
    .transform((value) => new Date(value).toISOString())
    .nullish()
    .meta({ description: 'When the key stops working (must be in the future); absent for a key that does not expire.' }),
});

/** Input of {@link ApiKeyService.create}. */
export type CreateApiKeyInput = z.input<typeof CreateApiKeyInput>;

/** An API key as listed (never with the key). */
export interface ApiKeyRecord {
  readonly keyId: string;
  readonly name: string;
  readonly prefix: string;
  readonly scopes: readonly string[];
  readonly expiresAt: string | null;
  readonly lastUsedAt: string | null;
  readonly createdAt: string;
}

/** A created API key: the only time the key itself is shown. */
export interface CreatedApiKey {
  readonly keyId: string;
  readonly apiKey: string;
  readonly prefix: string;
  readonly name: string;
  readonly scopes: readonly string[];
  readonly expiresAt: string | null;
}

/** Who creates a key: a user working in an organization, with their permissions there. */
export interface ApiKeyCaller {
  readonly userId: string;
  /** The caller's organization; keys belong to it. */
  readonly organizationId: string | null;
  /** The caller's permissions in that organization. */
  readonly permissions: ReadonlySet<string>;
}

/** Options of {@link createApiKeyService}. */
export interface ApiKeyServiceOptions {
  readonly store: ApiKeyStore;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Live (not revoked, not expired) keys per user; 10 by default. */
  readonly maxLivePerUser?: number;
  /** Least time between two `last_used_at` updates of a key; 60 seconds by default. */
  readonly usageIntervalMs?: number;
}

/**
 * API keys (SPEC-NOTES "API keys"): created by a user in their organization
 * with scopes within their own permissions, shown once, stored as SHA-256.
 * Also the {@link ApiKeyLookup} of the credential resolver, which grants a
 * key its scopes' permissions intersected with the creator's current ones.
 */
export interface ApiKeyService extends ApiKeyLookup {
  /**
   * Creates a key in the caller's organization and records
   * `identity.apiKey.created` on its trail, in one transaction.
   *
   * @param context who asked and from where, for the audit record (the caller by default).
   * @throws ProblemError `ApiKeys.OrganizationRequired` (403) without an organization,
   *   `Auth.Forbidden` (403) without `ApiKeysCreate`, `ApiKeys.ScopeExceedsPermissions` (403),
   *   `ApiKeys.LimitReached` (422), `Validation.Failed` (400) for bad input or a past `expiresAt`.
   */
  create(caller: ApiKeyCaller, input: CreateApiKeyInput, context?: AccountAuditContext): Promise<CreatedApiKey>;
  /** The user's keys in one organization (not revoked; expired ones included), newest first. */
  list(userId: string, organizationId: string): Promise<ApiKeyRecord[]>;
  /**
   * Revokes one of the user's keys in the organization; it stops working at
   * once. Records `identity.apiKey.revoked` on the organization's trail in
   * the same transaction.
   *
   * @param context who asked (the user, or an API key of theirs) and from where; the user by default.
   * @throws ProblemError `ApiKeys.NotFound` (404) for an unknown key or another user's or organization's.
   */
  revoke(userId: string, organizationId: string, keyId: string, context?: AccountAuditContext): Promise<void>;
  /** The key a raw value names (in any state), or `undefined`. */
  findByKey(rawKey: string): Promise<ApiKeyAccess | undefined>;
  /** Records use of a key, at most once per interval; never throws (failures are logged). */
  markUsed(keyId: string): void;
}

function toRecord(key: StoredApiKey): ApiKeyRecord {
  return {
    keyId: key.id,
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    expiresAt: key.expiresAt,
    lastUsedAt: key.lastUsedAt,
    createdAt: key.createdAt,
  };
}

/**
 * Creates the API key service.
 *
 * @example
 * const apiKeys = createApiKeyService({ store: createKnexApiKeyStore({ db, outbox, invalidator }) });
 * const created = await apiKeys.create({ userId, organizationId, permissions }, { name: 'CI' });
 * // created.apiKey: 'sk_live_…' (shown once)
 */
export function createApiKeyService(options: ApiKeyServiceOptions): ApiKeyService {
  const { store } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const maxLive = options.maxLivePerUser ?? 10;
  const usageIntervalMs = options.usageIntervalMs ?? 60_000;
  const usage = createThrottle(usageIntervalMs, clock);

  return {
    async create(caller, input, context = {}) {
      const parsed = CreateApiKeyInput.parse(input);
      const organizationId = caller.organizationId;
      if (!organizationId) throw new ProblemError('ApiKeys.OrganizationRequired');
      if (!caller.permissions.has('ApiKeysCreate')) {
        throw new ProblemError('Auth.Forbidden', 'This operation needs the ApiKeysCreate permission.');
      }
      const now = clock.now();
      if (parsed.expiresAt && new Date(parsed.expiresAt).getTime() <= now.getTime()) {
        throw new ValidationProblem({ expiresAt: ['Choose a time in the future.'] });
      }
      let scopes: string[];
      if (parsed.scopes) {
        const platformOnly = parsed.scopes.filter((scope) => scopeDefinition(scope)?.platformOnly);
        if (platformOnly.length > 0 && !(await store.isPlatformAdministrator(caller.userId, organizationId))) {
          throw new ProblemError(
            'ApiKeys.ScopeExceedsPermissions',
            `Only platform administrators may grant ${platformOnly.join(', ')}.`,
          );
        }
        const beyond = [...permissionsForScopes(parsed.scopes)].filter((permission) => !caller.permissions.has(permission));
        if (beyond.length > 0) {
          throw new ProblemError(
            'ApiKeys.ScopeExceedsPermissions',
            `The scopes need permissions you do not hold: ${beyond.sort().join(', ')}.`,
          );
        }
        scopes = parsed.scopes;
      } else {
        scopes = scopesWithin(caller.permissions);
      }
      const apiKey = `${API_KEY_PREFIX}${randomToken(32)}`;
      const key = {
        id: newId(),
        userId: caller.userId,
        organizationId,
        name: parsed.name,
        prefix: apiKey.slice(0, API_KEY_DISPLAY_LENGTH),
        keyHash: sha256Hex(apiKey),
        scopes,
        expiresAt: parsed.expiresAt ?? null,
        createdAt: now.toISOString(),
      };
      // The user's lock serializes concurrent creations: the limit holds under concurrency.
      const created = await store.transaction(async (tx) => {
        await tx.lockUser(key.userId);
        if ((await tx.countLive(key.userId, key.createdAt)) >= maxLive) return false;
        await tx.insert(key);
        await tx.audit?.([
          {
            action: AccountAuditActions.apiKeyCreated.action,
            organizationId,
            actor: auditActorFor(context, caller.userId),
            target: { type: 'apiKey', id: key.id, display: key.name },
            ...auditRequestFacts(context),
            metadata: { ownerId: key.userId, scopes, expiresAt: key.expiresAt },
          },
        ]);
        return true;
      });
      if (!created) {
        throw new ProblemError('ApiKeys.LimitReached', `You already have ${maxLive} live API keys; delete one first.`);
      }
      return { keyId: key.id, apiKey, prefix: key.prefix, name: key.name, scopes, expiresAt: key.expiresAt };
    },
    async list(userId, organizationId) {
      return (await store.list(userId, organizationId)).map(toRecord);
    },
    async revoke(userId, organizationId, keyId, context = {}) {
      const now = clock.now().toISOString();
      // The name, for people reading the trail (a key is listed until it is revoked).
      const name = (await store.list(userId, organizationId)).find((key) => key.id === keyId)?.name ?? null;
      const revoked = await store.transaction(async (tx) => {
        if (!(await tx.revoke(userId, organizationId, keyId, now))) return false;
        await tx.evict([{ namespace: CacheNamespaces.apiKeys, key: keyId }]);
        await tx.audit?.([
          {
            action: AccountAuditActions.apiKeyRevoked.action,
            organizationId,
            actor: auditActorFor(context, userId),
            target: { type: 'apiKey', id: keyId, display: name },
            ...auditRequestFacts(context),
            metadata: { ownerId: userId },
          },
        ]);
        return true;
      });
      if (!revoked) throw new ProblemError('ApiKeys.NotFound');
    },
    async findByKey(rawKey) {
      if (!API_KEY_FORMAT.test(rawKey)) return undefined;
      const key = await store.findByHash(sha256Hex(rawKey));
      if (!key) return undefined;
      return {
        id: key.id,
        userId: key.userId,
        organizationId: key.organizationId,
        scopes: key.scopes,
        expiresAt: key.expiresAt,
        revokedAt: key.revokedAt,
      };
    },
    markUsed(keyId) {
      if (!usage.take(keyId)) return;
      const now = clock.now();
      store
        .markUsed(keyId, now.toISOString(), new Date(now.getTime() - usageIntervalMs).toISOString())
        .catch((error: unknown) => logger.warn('could not record API key use', { keyId, error }));
    },
  };
}
