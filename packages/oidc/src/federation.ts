/**
 * The port through which the sign-in pipeline signs people in at other
 * identity providers. `@idt/oidc` defines it and never imports its
 * implementation: a federation module (`@idt/sso`) provides a
 * {@link SignInFederationSlot} under {@link SIGN_IN_FEDERATION_CAPABILITY}
 * and fills it when it is set up (after this module), and the sign-in steps
 * read the slot at request time. Without one, the sign-in pages are as they
 * were: no buttons, no identifier-first page, no routing.
 */

import type { AuditRequestFacts } from '@idt/core';

/** The capability name a federation module provides its {@link SignInFederationSlot} under. */
export const SIGN_IN_FEDERATION_CAPABILITY = 'oidc.signInFederation';

/** A late-bound holder: built before any module is set up, filled by the federation module's set-up. */
export interface SignInFederationSlot {
  current: SignInFederation | undefined;
}

/** A connection as the sign-in pages show it. */
export interface FederatedConnection {
  readonly id: string;
  /** The connection's name ("Acme Okta", "Google"). */
  readonly name: string;
}

/** Where an address (or an organization hint) signs in: an organization's connection. */
export interface HomeRealm {
  readonly connectionId: string;
  readonly organizationId: string;
  readonly organizationName: string;
  /** The organization refuses password and passkey sign-in for addresses of its verified domains. */
  readonly ssoRequired: boolean;
}

/** Why a sign-in at another provider did not end with a user. */
export type FederationFailureReason =
  /** The person (or the provider's policy) declined. */
  | 'denied'
  /** The provider did not answer in time, or could not be reached. */
  | 'unavailable'
  /** The answer was invalid (signature, audience, state, replay...). */
  | 'invalid'
  /** The sign-in took too long, or its answer was already used. */
  | 'expired'
  /** The connection is disabled or gone. */
  | 'disabled'
  /** The account here is deactivated, or its membership in the organization is suspended. */
  | 'suspended'
  /** The provider sent no usable e-mail address. */
  | 'no-email';

/** The outcome of a sign-in at another provider, as the sign-in pipeline meets it. */
export type FederatedOutcome =
  | {
      readonly kind: 'signed-in';
      readonly userId: string;
      /** Methods the provider asserted (RFC 8176 values only; `mfa` when it did), `fed` excluded. */
      readonly amr: readonly string[];
      /** The connection's organization (`null` for a platform connection). */
      readonly organizationId: string | null;
    }
  | {
      /** An account with the address exists here but cannot be linked without its owner: the password first. */
      readonly kind: 'link-required';
      readonly email: string;
      readonly connectionName: string;
      /** The handle {@link SignInFederation.link} takes once the password passed. */
      readonly handle: string;
    }
  | {
      readonly kind: 'failed';
      readonly reason: FederationFailureReason;
      /** The organization whose provider failed (`null` for a platform connection or when unknown). */
      readonly organizationName: string | null;
      readonly connectionName: string | null;
      /**
       * The federation module recorded the refusal on the audit trail already
       * (its callback's, with the connection's organization): the sign-in
       * pages record nothing more. Otherwise they record `oidc.signIn.failed`.
       */
      readonly audited?: boolean;
    };

/** What a started sign-in at another provider asks the browser to do. */
export type FederationStart =
  | { readonly kind: 'redirect'; readonly url: string }
  | {
      readonly kind: 'failed';
      readonly reason: FederationFailureReason;
      readonly organizationName: string | null;
      readonly connectionName: string | null;
      /** Recorded on the audit trail by the federation module already (see {@link FederatedOutcome}). */
      readonly audited?: boolean;
    };

/** The interaction a federated sign-in belongs to, and where its answer comes back. */
export interface FederationContext {
  /** The interaction's id: the outcome is bound to it. */
  readonly interactionUid: string;
  /** The interaction's page that takes the outcome (`…/interaction/{uid}/federated`); the module appends `?result=`. */
  readonly returnPath: string;
  /** The address typed, passed to the provider as its hint. */
  readonly loginHint?: string;
}

/** Federation, as the sign-in pipeline uses it. Every method answers quickly from caches on the sign-in hot path. */
export interface SignInFederation {
  /** Whether the sign-in page asks the address first: true once any organization connection is enabled. */
  identifierFirst(): Promise<boolean>;
  /** The enabled platform connections, shown as "Continue with …" buttons to everyone. */
  platformConnections(): Promise<readonly FederatedConnection[]>;
  /** The organization connection an address signs in with: its domain verified by an organization with an enabled connection. */
  homeRealm(email: string): Promise<HomeRealm | undefined>;
  /** The connection an `organization` hint routes to: the organization's one enabled connection. */
  organizationRealm(organizationId: string): Promise<HomeRealm | undefined>;
  /** Starts a sign-in at a connection (enabled, of the platform, or the one a routing step chose). */
  begin(connectionId: string, context: FederationContext): Promise<FederationStart>;
  /** Takes the outcome the connection's callback left for this interaction (each works once). */
  consume(handle: string, interactionUid: string): Promise<FederatedOutcome>;
  /**
   * Takes the outcome of an IdP-initiated sign-in this browser brought (its
   * `cookie` header): `undefined` when it brought none.
   */
  consumeUnsolicited(cookieHeader: string | null): Promise<FederatedOutcome | undefined>;
  /**
   * Links a `link-required` identity to `userId` once its owner passed their
   * password, and signs in; `request` is the page request's facts, for the
   * audit record.
   */
  link(handle: string, interactionUid: string, userId: string, request?: AuditRequestFacts): Promise<FederatedOutcome>;
}
