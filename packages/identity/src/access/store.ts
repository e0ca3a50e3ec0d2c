/** A user as the access checks need them. */
export interface UserAccess {
  readonly id: string;
  readonly status: 'active' | 'deactivated';
  readonly email: string;
  readonly firstName: string;
  readonly lastName: string;
}

/** The states of a membership. */
export type MembershipStatus = 'active' | 'pending' | 'suspended' | 'denied';

/** A membership as the access checks need it, with its organization's custom roles. */
export interface MembershipAccess {
  readonly organizationId: string;
  readonly organizationName: string;
  readonly organizationStatus: 'active' | 'suspended';
  readonly isPlatform: boolean;
  readonly status: MembershipStatus;
  /** Normalized (lowercase) role names. */
  readonly roles: readonly string[];
  /** The organization's custom roles: normalized name to permissions. */
  readonly customRoles: ReadonlyMap<string, readonly string[]>;
}

/**
 * What a token, key or session can be revoked by: its user, its client, its
 * sign-in session, or its grant (the token family a refresh token rotates in).
 */
export type RevocationSubject = 'user' | 'client' | 'session' | 'grant';

/** The access-token claim naming the grant (token family) a user token was issued under. */
export const GRANT_CLAIM = 'grant_id';

/** Reads what authorization decisions need; every read is by primary key. */
export interface AccessStore {
  findUser(userId: string): Promise<UserAccess | undefined>;
  findMembership(userId: string, organizationId: string): Promise<MembershipAccess | undefined>;
  /** The watermark (epoch seconds) before which tokens of the subject are refused, if any. */
  findRevocation(subject: RevocationSubject, id: string): Promise<number | undefined>;
}

/** An API key as the access checks need it. */
export interface ApiKeyAccess {
  readonly id: string;
  readonly userId: string;
  readonly organizationId: string;
  readonly scopes: readonly string[];
  readonly expiresAt: string | null;
  readonly revokedAt: string | null;
}

/** A sign-in session as the access checks need it. */
export interface SessionAccess {
  readonly id: string;
  readonly userId: string;
  readonly expiresAt: string;
  readonly revokedAt: string | null;
}

/** Looks API keys up by their raw value (implemented by the API-key store). */
export interface ApiKeyLookup {
  findByKey(rawKey: string): Promise<ApiKeyAccess | undefined>;
  /** Records use of a key (throttled by the implementation). */
  markUsed?(keyId: string): void;
}

/** Looks sign-in sessions up (implemented by the session store). */
export interface SessionLookup {
  /** The session a cookie value names. */
  findByCookie(cookieValue: string): Promise<SessionAccess | undefined>;
  /** Records activity on a session, at most once per minute. */
  touch(sessionId: string): void;
}

/** An OAuth client as the access checks need it (implemented by the OpenID provider module). */
export interface ClientAccess {
  readonly clientId: string;
  readonly organizationId: string | null;
  readonly status: 'active' | 'suspended';
}

/** Looks OAuth clients up. */
export interface ClientLookup {
  findClient(clientId: string): Promise<ClientAccess | undefined>;
}
