import { type Clock, type Logger, systemClock } from '@idt/core';
import type { FederationContext, FederationStart } from '@idt/oidc';
import type { SsoConnectionsService } from '../connections/service.js';
import { UpstreamOidcError } from '../oidc/failure.js';
import type { UpstreamOidc } from '../oidc/upstream.js';
import { safeRelayState } from '../saml/relay-state.js';
import type { ReplayCache } from '../saml/replay-cache.js';
import type { RequestCache } from '../saml/request-cache.js';
import { createSamlServiceProvider } from '../saml/service-provider.js';
import type { SignInTransactionStore } from './store.js';

/** How long a started sign-in waits for its callback: ten minutes on the injected clock. */
export const SIGN_IN_TRANSACTION_TTL_MS = 10 * 60_000;

/** The key of an OIDC sign-in transaction: its state. */
export const oidcTransactionKey = (state: string) => `oidc\n${state}`;
/** The key of a SAML sign-in transaction: the connection and the request id. */
export const samlTransactionKey = (connectionId: string, requestId: string) => `saml\n${connectionId}\n${requestId}`;

/** What {@link createBegin} needs. */
export interface BeginOptions {
  readonly connections: SsoConnectionsService;
  readonly upstream: UpstreamOidc;
  readonly transactions: SignInTransactionStore;
  readonly replayCache: ReplayCache;
  readonly requestCache: RequestCache;
  /** The origin sign-in happens on: return paths must stay on it. */
  readonly origin: string;
  readonly organizationName: (organizationId: string) => Promise<string | null>;
  readonly logger: Logger;
  readonly clock?: Clock;
}

/**
 * Starts a sign-in at a connection: an OIDC authorization request
 * (code + PKCE + state + nonce, `login_hint`) or a SAML AuthnRequest
 * (HTTP-Redirect), with the transaction kept server-side under the hash of
 * its state or request id, for ten minutes, taken once by the callback.
 *
 * @example
 * const begin = createBegin({ connections, upstream, transactions, replayCache, requestCache, origin, organizationName, logger });
 * const start = await begin(connectionId, { interactionUid, returnPath: `/interaction/${uid}/federated` });
 */
export function createBegin(options: BeginOptions) {
  const { connections, upstream, transactions, logger } = options;
  const clock = options.clock ?? systemClock;

  return async function begin(connectionId: string, context: FederationContext): Promise<FederationStart> {
    const connection = await connections.find(connectionId);
    const organizationName = connection?.organizationId ? await options.organizationName(connection.organizationId) : null;
    const failed = (reason: 'disabled' | 'unavailable' | 'invalid'): FederationStart => ({
      kind: 'failed',
      reason,
      organizationName,
      connectionName: connection?.name ?? null,
    });
    if (!connection?.enabled) {
      logger.warn('sso sign-in not started', { reason: 'disabled', connectionId });
      return failed('disabled');
    }
    const returnPath = safeRelayState(context.returnPath, options.origin);
    if (!returnPath || returnPath !== context.returnPath || returnPath.includes('?') || returnPath.includes('#')) {
      logger.error('sso sign-in not started', { reason: 'bad-return-path', connectionId });
      return failed('invalid');
    }
    const expiresAt = new Date(clock.now().getTime() + SIGN_IN_TRANSACTION_TTL_MS);
    const common = { connectionId: connection.id, interactionUid: context.interactionUid, returnPath, expiresAt };
    if (connection.kind === 'oidc') {
      try {
        const started = await upstream.startAuthorization({
          connection,
          redirectUri: connections.urls(connection.id).oidcRedirectUri,
          ...(context.loginHint ? { loginHint: context.loginHint } : {}),
        });
        const { url, state, expiresAt: _upstreamExpiry, ...kept } = started;
        await transactions.save(oidcTransactionKey(state), { ...common, protocol: 'oidc', data: kept });
        return { kind: 'redirect', url };
      } catch (error) {
        if (!(error instanceof UpstreamOidcError)) throw error;
        logger.warn('sso sign-in not started', {
          reason: 'unavailable',
          upstreamReason: error.reason,
          detail: error.detail,
          connectionId,
        });
        return failed('unavailable');
      }
    }
    const provider = createSamlServiceProvider(connections.samlConnectionOf(connection), {
      clock,
      replayCache: options.replayCache,
      requestCache: options.requestCache,
      requestTtlMs: SIGN_IN_TRANSACTION_TTL_MS,
    });
    const request = await provider.createAuthnRequest();
    await transactions.save(samlTransactionKey(connection.id, request.requestId), {
      ...common,
      protocol: 'saml',
      data: { requestId: request.requestId },
    });
    return { kind: 'redirect', url: request.url };
  };
}
