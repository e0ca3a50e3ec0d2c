/** Cache namespaces of the identity module; keys are documented per namespace. */
export const CacheNamespaces = {
  /** key: user id */
  users: 'identity.users',
  /** key: `${userId}:${organizationId}`; ALL_KEYS after organization-wide changes (status, custom roles) */
  memberships: 'identity.memberships',
  /** key: `${subject}:${id}` */
  revocations: 'identity.revocations',
  /** key: API key id; ALL_KEYS after bulk changes */
  apiKeys: 'identity.api-keys',
  /** key: session id; ALL_KEYS after bulk changes */
  sessions: 'identity.sessions',
  /** key: client id */
  clients: 'identity.clients',
  // B: organization security policies
  /** key: organization id; also empties the cached "does any of this user's organizations require MFA" answers */
  organizationPolicies: 'identity.organization-policies',
  /** SCIM bearer tokens, cached by hash: ALL_KEYS when one is revoked */
  scimTokens: 'identity.scim-tokens',
} as const;

/** Subscribes to evictions of a namespace; returns an unsubscribe function. */
export type CacheSubscriber = (namespace: string, listener: (key: string) => void) => () => void;

/** The key of an {@link Eviction} that empties its whole namespace (core's `ALL_KEYS`). */
export const EVERY_KEY = '*';

/**
 * A cached entry a service evicts in its transaction (once it commits):
 * `key` of one of the {@link CacheNamespaces}, or all of it for {@link EVERY_KEY}.
 */
export interface Eviction {
  readonly namespace: string;
  readonly key: string;
}
