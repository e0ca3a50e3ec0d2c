import { type Clock, createTtlCache, pathsUnder, ratePartition } from '@idt/core';
import { basicClientId } from '../provider/basic-auth.js';
import { OIDC_ROUTES } from '../provider/create-provider.js';

/**
 * How a provider endpoint counted under the Auth policy names its client:
 * `client-authentication` endpoints by HTTP Basic or `client_id` in the form
 * body (`client_secret_basic`, `client_secret_post`); `authorization` by the
 * `client_id` parameter (query of a GET, form of a POST).
 */
export type AuthLimitedEndpoint = 'authorization' | 'client-authentication';

const isAuthorizationPath = pathsUnder([OIDC_ROUTES.authorization]);
const isClientAuthenticationPath = pathsUnder([
  OIDC_ROUTES.token,
  OIDC_ROUTES.revocation,
  OIDC_ROUTES.introspection,
  OIDC_ROUTES.pushed_authorization_request,
]);

/**
 * Whether a provider path (without the deployment prefix) is counted under
 * the Auth policy (SPEC 8.1), and how it names its client. The authorization
 * endpoint's resumption after sign-in (`/connect/authorize/<uid>`) is counted
 * too; it names no client.
 */
export function authLimitedEndpoint(path: string): AuthLimitedEndpoint | undefined {
  if (isAuthorizationPath(path)) return 'authorization';
  return isClientAuthenticationPath(path) ? 'client-authentication' : undefined;
}

/** Parsed query or form parameters (a repeated name is an array). */
export type RequestParams = Readonly<Record<string, string | readonly string[]>>;

/** What names the client of a provider request. */
export interface ClientNamingRequest {
  readonly endpoint: AuthLimitedEndpoint;
  readonly method: string | undefined;
  /** The `Authorization` header. */
  readonly authorization: string | undefined;
  /** The parsed query string. */
  readonly query: RequestParams | undefined;
  /** The parsed URL-encoded form body (already read and checked by the request guard). */
  readonly form: RequestParams | undefined;
}

const single = (value: string | readonly string[] | undefined): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;

/**
 * The client id a provider request names, whatever the client-authentication
 * method: HTTP Basic first, then `client_id` of the form body; at the
 * authorization endpoint, `client_id` of the query (GET) or form (POST).
 * `undefined` when it names none, or names it more than once.
 */
export function requestClientId(request: ClientNamingRequest): string | undefined {
  if (request.endpoint === 'authorization') {
    return single((request.method === 'POST' ? request.form : request.query)?.client_id);
  }
  return basicClientId(request.authorization) ?? single(request.form?.client_id);
}

/** Who a provider request is counted for: the organization of the client it names, and the caller's address. */
export interface AuthSubject {
  readonly organizationId?: string | null;
  readonly userId?: string | null;
  /** The caller's address (`undefined` when unknown). */
  readonly ip: string | undefined;
}

/**
 * The Auth policy's partition of a provider request: core's one rule
 * ({@link ratePartition}, SPEC 8.1) under the `auth` policy. The provider's
 * endpoints know the organization through the client a request names; the
 * sign-in pages, and requests naming no client or an unknown one, fall back
 * to the IP.
 *
 * @example
 * authPartition({ organizationId: 'org-1', ip: '192.0.2.1' }); // 'org:org-1'
 * authPartition({ ip: '192.0.2.1' });                          // 'ip:192.0.2.1'
 */
export function authPartition(subject: AuthSubject): string {
  return ratePartition('auth', subject, subject.ip);
}

/** Client ids are at most this long (the column's width): longer ones are unknown without a lookup. */
const MAX_CLIENT_ID_LENGTH = 200;

/** Options of {@link createClientOrganizations}. */
export interface ClientOrganizationsOptions {
  /** Looks a client up in the database: its organization (`null` when it has none), `undefined` when it does not exist. */
  readonly find: (clientId: string) => Promise<{ readonly organizationId: string | null } | undefined>;
  /** Most registered clients remembered (20,000). */
  readonly knownMax?: number;
  /** How long a registered client is remembered; changes evict it before (10 minutes). */
  readonly knownTtlMs?: number;
  /** Most client ids that do not exist remembered (1,000); the oldest is forgotten first. */
  readonly unknownMax?: number;
  /** How long a client id that does not exist is remembered (1 minute). */
  readonly unknownTtlMs?: number;
  readonly clock?: Clock;
}

/** The organizations of client ids, from memory on the hot path. */
export interface ClientOrganizations {
  /**
   * The organization of a client id: synchronously when remembered (`null`
   * for a client without an organization or an id that does not exist),
   * else a promise of the one lookup that remembers it. A failed lookup
   * answers `null` and remembers nothing.
   */
  of(clientId: string): string | null | Promise<string | null>;
  /** Forgets a client id (it changed), or every one (`'*'`). */
  evict(clientId: string): void;
  /** How many ids are remembered: registered clients and ids that do not exist. */
  size(): { readonly known: number; readonly unknown: number };
}

/**
 * Remembers which organization each client id belongs to, for the Auth
 * policy's partition, so that counting a request needs no database round
 * trip once its client was seen. Registered clients and ids that do not
 * exist are remembered apart, each with its own bound: made-up ids can
 * neither grow memory without limit nor push the registered clients out,
 * and an id that does not exist is looked up once a minute at most. Ids
 * longer than a client id can be are never looked up.
 */
export function createClientOrganizations(options: ClientOrganizationsOptions): ClientOrganizations {
  const clock = options.clock;
  const known = createTtlCache<string | null>({
    ttlMs: options.knownTtlMs ?? 600_000,
    max: options.knownMax ?? 20_000,
    ...(clock ? { clock } : {}),
  });
  const unknown = createTtlCache<true>({
    ttlMs: options.unknownTtlMs ?? 60_000,
    max: options.unknownMax ?? 1_000,
    ...(clock ? { clock } : {}),
  });
  const loading = new Map<string, Promise<string | null>>();
  // Bumped on every eviction: a lookup that started before one remembers nothing.
  let generation = 0;

  function load(clientId: string): Promise<string | null> {
    const pending = loading.get(clientId);
    if (pending) return pending;
    const started = generation;
    const promise = options
      .find(clientId)
      .then(
        (client) => {
          if (generation === started) {
            if (client) known.set(clientId, client.organizationId);
            else unknown.set(clientId, true);
          }
          return client?.organizationId ?? null;
        },
        () => null,
      )
      .finally(() => loading.delete(clientId));
    loading.set(clientId, promise);
    return promise;
  }

  return {
    of(clientId) {
      if (clientId.length > MAX_CLIENT_ID_LENGTH) return null;
      const organizationId = known.get(clientId);
      if (organizationId !== undefined) return organizationId;
      if (unknown.get(clientId)) return null;
      return load(clientId);
    },
    evict(clientId) {
      generation += 1;
      if (clientId === '*') {
        known.clear();
        unknown.clear();
      } else {
        known.delete(clientId);
        unknown.delete(clientId);
      }
    },
    size: () => ({ known: known.size, unknown: unknown.size }),
  };
}
