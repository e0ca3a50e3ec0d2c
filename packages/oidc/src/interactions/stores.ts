import type { GrantContext } from '../provider/create-provider.js';

/** Remembered consent per user and client (revocable). */
export interface ConsentStore {
  /** The scopes the user consented to for the client, or `undefined`. */
  find(userId: string, clientId: string): Promise<string[] | undefined>;
  /** Adds scopes to the remembered consent. */
  remember(userId: string, clientId: string, scopes: readonly string[], at: Date): Promise<void>;
  /** Forgets the consent; returns whether there was one. */
  forget(userId: string, clientId: string): Promise<boolean>;
  list(userId: string): Promise<Array<{ clientId: string; scopes: string[]; updatedAt: string }>>;
}

/** The organization and refresh-token lifetime of each grant. */
export interface GrantContextStore {
  get(grantId: string): Promise<GrantContext | undefined>;
  /** Records a grant's context; `expiresAt` bounds it to the grant's life. */
  set(grantId: string, context: GrantContext, expiresAt: Date): Promise<void>;
}
