import type { FeatureContext, IdentityFeature } from './context.js';

/** Users, organizations, memberships, invitations and roles. */
export interface AccountsFeature extends IdentityFeature {
  readonly services: Record<string, never>;
}

/** Builds the accounts feature. */
export function createAccountsFeature(_ctx: FeatureContext): AccountsFeature {
  return { routes: [], events: [], handlers: [], jobs: [], services: {} };
}
