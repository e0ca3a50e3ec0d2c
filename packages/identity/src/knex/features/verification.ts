import { UserEmailVerificationRequestedEvent, UserEmailVerifiedEvent } from '../../email-verification/events.js';
import { createRegistrationVerificationHandler } from '../../email-verification/registration-handler.js';
import { createEmailVerificationService, type EmailVerificationService } from '../../email-verification/service.js';
import { createEmailVerificationRoutes } from '../../http/routes/email-verification.js';
import { createOrganizationSecurityPolicyRoutes } from '../../http/routes/organization-security-policy.js';
import { OrganizationSecurityPolicyChangedEvent } from '../../organization-policy/events.js';
import {
  createOrganizationSecurityPolicyService,
  type OrganizationSecurityPolicyService,
} from '../../organization-policy/service.js';
import { createKnexEmailVerificationStore } from '../email-verification-store.js';
import { createKnexOrganizationPolicyStore } from '../organization-policy-store.js';
import type { FeatureContext, IdentityFeature } from './context.js';

/** The services of the verification feature (`identity.verification`), for hosts and for the sign-in pages. */
export interface VerificationServices {
  /** Verification links: mailed after registration and on request, used on the confirm page. */
  readonly email: EmailVerificationService;
  /** Organizations' `requireMfa` and `requireVerifiedEmail`, cached and evicted on change. */
  readonly organizationPolicy: OrganizationSecurityPolicyService;
}

/** Verified e-mail addresses and organizations' security policies. */
export interface VerificationFeature extends IdentityFeature {
  readonly services: VerificationServices;
}

const HOUR_MS = 3_600_000;

/**
 * Builds the verification feature: e-mail verification (store, service,
 * routes, events, the registration handler and a pruning job) and the
 * organization security policy (its routes and event).
 *
 * @example
 * const verification = createVerificationFeature(ctx);
 * const { requireMfa } = await verification.services.organizationPolicy.get(organizationId);
 */
export function createVerificationFeature(ctx: FeatureContext): VerificationFeature {
  const { db, outbox, invalidator, clock, settings, audit } = ctx;
  const storeOptions = { db, outbox, invalidator };
  const organizationPolicy = createOrganizationSecurityPolicyService({
    store: createKnexOrganizationPolicyStore({ ...storeOptions, ...(audit ? { audit } : {}) }),
    subscribe: (namespace, listener) => invalidator.subscribe(namespace, listener),
    requireVerifiedEmail: settings.requireVerifiedEmail ?? false,
    clock,
  });
  const email = createEmailVerificationService({
    store: createKnexEmailVerificationStore(storeOptions),
    counter: ctx.counter,
    tokens: ctx.tokens,
    authUrl: settings.authUrl,
    clock,
    logger: ctx.logger,
  });
  return {
    routes: [...createEmailVerificationRoutes(email), ...createOrganizationSecurityPolicyRoutes(organizationPolicy)],
    events: [UserEmailVerificationRequestedEvent, UserEmailVerifiedEvent, OrganizationSecurityPolicyChangedEvent],
    // The notifications module mails the links (one sender); this one records a link for each registration.
    handlers: [createRegistrationVerificationHandler(email)],
    jobs: [{ name: 'identity: prune e-mail verification links', intervalMs: HOUR_MS, run: () => email.prune() }],
    services: { email, organizationPolicy },
  };
}
