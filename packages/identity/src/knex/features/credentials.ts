import type { CredentialsFeature as BaseCredentialsFeature, FeatureContext } from './context.js';

/** Sessions, API keys, e-mail change and passwordless sign-in. */
export interface CredentialsFeature extends BaseCredentialsFeature {
  readonly services: Record<string, never>;
}

/** Builds the credentials feature. */
export function createCredentialsFeature(_ctx: FeatureContext): CredentialsFeature {
  return {
    routes: [],
    events: [],
    handlers: [],
    jobs: [],
    services: {},
    apiKeyLookup: { findByKey: async () => undefined },
    sessionLookup: { findByCookie: async () => undefined, touch: () => undefined },
  };
}
