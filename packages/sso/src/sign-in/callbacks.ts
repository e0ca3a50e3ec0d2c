import { type AuditRequestFacts, type Clock, type Logger, systemClock } from '@idt/core';
import type { FederationFailureReason } from '@idt/oidc';
import { mapSamlAttributes, mapUpstreamClaims } from '../connections/claim-mapping.js';
import type { ConnectionRecord } from '../connections/records.js';
import type { SsoConnectionsService } from '../connections/service.js';
import type { UpstreamOidcReason } from '../oidc/failure.js';
import type { UpstreamOidc } from '../oidc/upstream.js';
import { safeRelayState } from '../saml/relay-state.js';
import type { ReplayCache } from '../saml/replay-cache.js';
import type { RequestCache } from '../saml/request-cache.js';
import { createSamlServiceProvider, type SamlProfile } from '../saml/service-provider.js';
import { oidcTransactionKey, SIGN_IN_TRANSACTION_TTL_MS, samlTransactionKey } from './begin.js';
import type { Provisioner, UpstreamIdentity } from './provisioning.js';
import type { PendingSignIn, SignInTransactionStore } from './store.js';

/** The cookie that carries the handle of an IdP-initiated sign-in's outcome to the sign-in page. */
export const UNSOLICITED_COOKIE = 'idt_sso_unsolicited';
/** Its lifetime, in seconds. */
export const UNSOLICITED_COOKIE_MAX_AGE_S = 300;

/** The authentication method references of RFC 8176 (`fed` is the sign-in itself, never passed on). */
export const RFC8176_AMR: ReadonlySet<string> = new Set([
  'face',
  'fpt',
  'geo',
  'hwk',
  'iris',
  'kba',
  'mca',
  'mfa',
  'otp',
  'pin',
  'pwd',
  'rba',
  'retina',
  'sc',
  'sms',
  'swk',
  'tel',
  'user',
  'vbm',
  'wia',
]);

const SAML_EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';

/** Where the browser goes after a callback, or the page it sees when the callback belongs to no sign-in. */
export type CallbackAnswer =
  | { readonly kind: 'redirect'; readonly location: string; readonly setCookie?: string }
  | {
      readonly kind: 'error';
      /** The organization whose provider failed, when known. */
      readonly organizationName: string | null;
      readonly reason: FederationFailureReason;
    };

/** What {@link createCallbacks} needs. */
export interface CallbacksOptions {
  readonly connections: SsoConnectionsService;
  readonly upstream: UpstreamOidc;
  readonly transactions: SignInTransactionStore;
  readonly provisioner: Provisioner;
  readonly replayCache: ReplayCache;
  readonly requestCache: RequestCache;
  readonly organizationName: (organizationId: string) => Promise<string | null>;
  /** The public base URL: the origin of RelayState and the cookie's `Secure`. */
  readonly publicBaseUrl: string;
  readonly logger: Logger;
  readonly clock?: Clock;
}

/** The upstream OIDC refusals as the sign-in pages name them. */
function oidcFailureReason(reason: UpstreamOidcReason): FederationFailureReason {
  switch (reason) {
    case 'access-denied':
      return 'denied';
    case 'timeout':
    case 'unreachable':
      return 'unavailable';
    case 'transaction-expired':
      return 'expired';
    default:
      return 'invalid';
  }
}

/** The methods an OIDC `amr` claim asserts, RFC 8176 values only. */
export function registeredAmr(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return [...new Set(value.filter((entry): entry is string => typeof entry === 'string' && RFC8176_AMR.has(entry)))];
}

/** The e-mail of a SAML profile: the mapped attribute, else an e-mail-format NameID. */
function samlProfileEmail(profile: SamlProfile, mapped: string | null): string | null {
  if (mapped) return mapped;
  if (profile.nameIdFormat === SAML_EMAIL_FORMAT && /^[^\s@]+@[^\s@]+$/.test(profile.nameId)) return profile.nameId;
  return null;
}

function withResult(returnPath: string, handle: string): string {
  return `${returnPath}?result=${encodeURIComponent(handle)}`;
}

/**
 * The two ways back from an upstream provider: the OIDC callback and the
 * SAML assertion consumer service. Each takes its transaction once, verifies
 * the answer, provisions in one transaction and answers a 303 to the
 * interaction with the outcome's handle; a callback that belongs to no
 * pending sign-in (expired, replayed, forged) answers the error page and
 * changes nothing. Every failure is logged with its reason. `request`, the
 * facts of the callback or ACS post (client address, user agent, trace id),
 * goes on the `sso.signIn.succeeded` or `sso.signIn.failed` record.
 *
 * @example
 * const callbacks = createCallbacks({ connections, upstream, transactions, provisioner, replayCache, requestCache, organizationName, publicBaseUrl, logger });
 * const answer = await callbacks.oidc(new URL(request.url), auditRequestOf(route));
 */
export function createCallbacks(options: CallbacksOptions) {
  const { connections, upstream, transactions, provisioner, logger } = options;
  const clock = options.clock ?? systemClock;
  const origin = new URL(options.publicBaseUrl).origin;
  const secure = options.publicBaseUrl.startsWith('https:');

  const organizationOf = async (connection: Pick<ConnectionRecord, 'organizationId'> | undefined) =>
    connection?.organizationId ? options.organizationName(connection.organizationId) : null;

  async function failTo(
    pending: PendingSignIn,
    connection: ConnectionRecord | undefined,
    reason: FederationFailureReason,
    request: AuditRequestFacts | undefined,
  ): Promise<CallbackAnswer> {
    const { handle } = await provisioner.fail(
      { interactionUid: pending.interactionUid },
      reason,
      connection,
      await organizationOf(connection),
      request,
    );
    return { kind: 'redirect', location: withResult(pending.returnPath, handle) };
  }

  async function oidc(callbackUrl: URL, request?: AuditRequestFacts): Promise<CallbackAnswer> {
    const states = callbackUrl.searchParams.getAll('state');
    const state = states.length === 1 ? states[0] : undefined;
    const pending = state ? await transactions.take(oidcTransactionKey(state)) : undefined;
    if (!state || !pending || pending.protocol !== 'oidc') {
      logger.warn('sso callback refused', { protocol: 'oidc', reason: 'no-transaction' });
      return { kind: 'error', organizationName: null, reason: 'expired' };
    }
    const connection = await connections.find(pending.connectionId);
    if (!connection?.enabled || connection.kind !== 'oidc') {
      logger.warn('sso callback refused', { protocol: 'oidc', reason: 'disabled', connectionId: pending.connectionId });
      return failTo(pending, connection, 'disabled', request);
    }
    const data = pending.data as { issuer: string; redirectUri: string; nonce: string; codeVerifier: string };
    const result = await upstream.completeAuthorization({
      connection,
      transaction: {
        connectionId: connection.id,
        issuer: data.issuer,
        redirectUri: data.redirectUri,
        nonce: data.nonce,
        codeVerifier: data.codeVerifier,
        // Its hash found the transaction: the state is the one the authorization was sent with.
        state,
        expiresAt: pending.expiresAt,
      },
      callbackUrl,
    });
    if (!result.ok) {
      logger.warn('sso callback refused', {
        protocol: 'oidc',
        reason: result.reason,
        detail: result.detail,
        ...(result.upstreamError ? { upstreamError: result.upstreamError } : {}),
        connectionId: connection.id,
      });
      return failTo(pending, connection, oidcFailureReason(result.reason), request);
    }
    const upstreamIdentity: UpstreamIdentity = {
      connectionId: connection.id,
      subject: result.subject,
      profile: mapUpstreamClaims(result.claims, connection.attributeMapping),
      emailVerifiedByProvider: result.emailVerified,
      amr: registeredAmr(result.claims.amr),
      initiatedBy: 'sp',
    };
    const { handle, outcome } = await provisioner.signIn(upstreamIdentity, { interactionUid: pending.interactionUid }, request);
    if (outcome.kind === 'failed') {
      logger.warn('sso sign-in refused', { protocol: 'oidc', reason: outcome.reason, connectionId: connection.id });
    }
    return { kind: 'redirect', location: withResult(pending.returnPath, handle) };
  }

  async function saml(connectionId: string, body: Record<string, unknown>, request?: AuditRequestFacts): Promise<CallbackAnswer> {
    const connection = await connections.find(connectionId);
    if (connection?.kind !== 'saml') {
      logger.warn('sso response refused', { protocol: 'saml', reason: 'no-connection' });
      return { kind: 'error', organizationName: null, reason: 'disabled' };
    }
    const organizationName = await organizationOf(connection);
    const provider = createSamlServiceProvider(connections.samlConnectionOf(connection), {
      clock,
      replayCache: options.replayCache,
      requestCache: options.requestCache,
      requestTtlMs: SIGN_IN_TRANSACTION_TTL_MS,
    });
    const relayState = typeof body.RelayState === 'string' ? body.RelayState : null;
    const validation = await provider.validatePostResponse({ SAMLResponse: body.SAMLResponse }, { relayState });
    if (!validation.ok) {
      const { reason, detail } = validation.refusal;
      logger.warn('sso response refused', { protocol: 'saml', reason, detail, connectionId: connection.id });
      const mapped: FederationFailureReason =
        reason === 'idp-error'
          ? 'denied'
          : reason === 'unknown-in-response-to' || reason === 'replayed' || reason === 'expired'
            ? 'expired'
            : 'invalid';
      return { kind: 'error', organizationName, reason: mapped };
    }
    const { profile } = validation;
    const mapped = mapSamlAttributes(profile.attributes, connection.attributeMapping);
    const upstreamIdentity: UpstreamIdentity = {
      connectionId: connection.id,
      subject: profile.nameId,
      profile: { ...mapped, email: samlProfileEmail(profile, mapped.email) },
      emailVerifiedByProvider: false,
      // AuthnContextClassRef is no RFC 8176 method.
      amr: [],
      initiatedBy: validation.initiatedBy,
    };

    if (validation.initiatedBy === 'sp') {
      const pending = validation.requestId
        ? await transactions.take(samlTransactionKey(connection.id, validation.requestId))
        : undefined;
      if (pending?.protocol !== 'saml') {
        logger.warn('sso response refused', { protocol: 'saml', reason: 'no-transaction', connectionId: connection.id });
        return { kind: 'error', organizationName, reason: 'expired' };
      }
      if (!connection.enabled) {
        logger.warn('sso response refused', { protocol: 'saml', reason: 'disabled', connectionId: connection.id });
        return failTo(pending, connection, 'disabled', request);
      }
      const { handle, outcome } = await provisioner.signIn(upstreamIdentity, { interactionUid: pending.interactionUid }, request);
      if (outcome.kind === 'failed') {
        logger.warn('sso sign-in refused', { protocol: 'saml', reason: outcome.reason, connectionId: connection.id });
      }
      return { kind: 'redirect', location: withResult(pending.returnPath, handle) };
    }

    // IdP-initiated: the service provider only accepts it when the connection allows it.
    const landing = safeRelayState(connection.defaultRelayState, origin);
    if (!connection.enabled || !connection.allowIdpInitiated || !landing) {
      logger.warn('sso response refused', {
        protocol: 'saml',
        reason: connection.enabled ? 'idp-initiated-disabled' : 'disabled',
        connectionId: connection.id,
      });
      return { kind: 'error', organizationName, reason: connection.enabled ? 'invalid' : 'disabled' };
    }
    const { handle, outcome } = await provisioner.signIn(upstreamIdentity, { interactionUid: null }, request);
    if (outcome.kind === 'failed') {
      logger.warn('sso sign-in refused', { protocol: 'saml', reason: outcome.reason, connectionId: connection.id });
      return { kind: 'error', organizationName, reason: outcome.reason };
    }
    const cookie = [
      `${UNSOLICITED_COOKIE}=${handle}`,
      'HttpOnly',
      ...(secure ? ['Secure'] : []),
      'SameSite=Lax',
      'Path=/',
      `Max-Age=${UNSOLICITED_COOKIE_MAX_AGE_S}`,
    ].join('; ');
    return { kind: 'redirect', location: landing, setCookie: cookie };
  }

  return { oidc, saml };
}
