import type { ProblemError } from '@idt/problem';
import type { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import type { RatePolicyName } from '../config/config.js';
import type { HandlerResponse, HeaderReader } from './light.js';

/** The HTTP methods routes may declare. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * Who may call a route:
 * - `anonymous`: no credential is read;
 * - `optional`: a credential is read when present and must then be valid;
 * - `required`: a valid credential is needed (401 otherwise).
 */
export type RouteAuth = 'anonymous' | 'optional' | 'required';

/**
 * Whether a route works on an organization's data:
 * - `required`: a tenant must resolve (403 `Tenant.Required` otherwise);
 * - `optional`: the route also serves organization-less callers.
 */
export type RouteTenancy = 'required' | 'optional';

/** A response a route documents. */
export interface RouteResponse {
  /** What the response means. */
  readonly description: string;
  /** The body schema; absent for empty responses. */
  readonly schema?: z.ZodType;
  /** The body media type; `application/json` by default. */
  readonly contentType?: string;
  /** Response headers worth documenting, name to description. */
  readonly headers?: Record<string, string>;
}

/** How a route's request body is read. */
export type RouteBodyKind = 'json' | 'form' | 'raw';

/** What the pipeline hands a route handler. */
export interface RouteContext<TParams = Record<string, string>, TQuery = Record<string, unknown>, TBody = unknown> {
  /**
   * The Fetch `Request`, with the deployment prefix still in its URL. Built
   * on first use: prefer `headers` and `method` when they are all you need.
   */
  readonly request: Request;
  /** The request method. */
  readonly method: string;
  /** The request headers. */
  readonly headers: HeaderReader;
  /** The parsed request URL. */
  readonly url: URL;
  /** The route path the request matched, without the prefix (`/v1/users/{id}`). */
  readonly routePath: string;
  /** Validated path parameters. */
  readonly params: TParams;
  /** Validated query parameters. */
  readonly query: TQuery;
  /** The validated body (`undefined` when the route declares none). */
  readonly body: TBody;
  /** The authenticated caller, or `null` on anonymous routes. */
  readonly principal: Principal | null;
  /** The organization the request works in, or `null` when none resolved. */
  readonly tenantId: string | null;
  /** The echoed or created `x-request-id`. */
  readonly requestId: string;
  /** The W3C trace id of the request. */
  readonly traceId: string;
  /** The peer address (or the first forwarded address behind a trusted proxy). */
  readonly clientIp: string;
  /** Aborts when the client goes away. */
  readonly signal: AbortSignal;
  /** The public base URL of the API, prefix included, e.g. `https://id.example.com/idt`. */
  readonly baseUrl: string;
  /**
   * The deployment path prefix (`''` or `/segment`), for paths written into
   * answers: a 201's `location: \`${prefix}/v1/things/${id}\``.
   */
  readonly prefix: string;
}

/** A route: method, path, schemas, policy and the handler, all in one place. */
export interface Route {
  readonly method: HttpMethod;
  /** Path without the deployment prefix; parameters in braces: `/v1/inquiries/{id}`. */
  readonly path: string;
  /** A unique, camelCase operation id for the API document. */
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tags?: readonly string[];
  /** Defaults to `required`. */
  readonly auth?: RouteAuth;
  /** Defaults to `required` when the route needs a credential. */
  readonly tenant?: RouteTenancy;
  /** Permissions the caller must all hold. */
  readonly permissions?: readonly string[];
  /** The rate-limit policy; `global` by default, `false` for none. */
  readonly ratePolicy?: RatePolicyName | false;
  /**
   * Also take the methods no route of this path declares (HEAD without a
   * GET route, OPTIONS, unknown methods): for a handler that refuses them
   * itself, such as the browser log ingest with its own 405 body. `Allow`
   * of other 405s still lists only declared methods.
   */
  readonly otherMethods?: boolean;
  readonly request?: {
    readonly params?: z.ZodType;
    readonly query?: z.ZodType;
    readonly body?: z.ZodType;
    /** `json` (default), `form` (urlencoded) or `raw` (the handler reads the stream). */
    readonly bodyKind?: RouteBodyKind;
    /** Documented media type of a `raw` body, e.g. `multipart/form-data`. */
    readonly rawContentType?: string;
    /** Largest body accepted, in bytes (JSON and form default to 1 MiB). */
    readonly maxBodyBytes?: number;
  };
  readonly responses: Readonly<Record<number, RouteResponse>>;
  /** Codes this route may answer besides the generic ones, for the API document. */
  readonly problemCodes?: readonly string[];
  /** Leave the route out of the API document. */
  readonly hidden?: boolean;
  /**
   * Document the operation but do not route it: another surface serves it
   * (oidc-provider's `/connect/*` and `/.well-known/*`). The handler never runs.
   */
  readonly documentationOnly?: boolean;
  /** OpenAPI beyond what the route's own fields say. */
  readonly openApi?: RouteOpenApi;
  /**
   * Renders this route's own body for some errors (e.g. the short bodies of
   * the e-mail change endpoints); return `undefined` for the problem document.
   * Runs for errors raised once the route matched, authentication included.
   */
  readonly renderError?: (problem: ProblemError) => HandlerResponse | undefined;
  readonly handler: (ctx: RouteContext<any, any, any>) => Promise<HandlerResponse> | HandlerResponse;
}

/** What a route adds to the generated OpenAPI document. */
export interface RouteOpenApi {
  /** The operation's security requirements, replacing the one its `auth` implies. */
  readonly security?: ReadonlyArray<Readonly<Record<string, readonly string[]>>>;
  /** Security schemes added to `components.securitySchemes` (e.g. the provider's OAuth 2 flows). */
  readonly securitySchemes?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Names of {@link securitySchemes} that become alternatives of the document's default security. */
  readonly defaultSecurity?: readonly string[];
  /** Descriptions (Markdown) of the tags the route uses, shown as the tag's introduction. */
  readonly tagDescriptions?: Readonly<Record<string, string>>;
  /**
   * Specification extensions of the operation (`x-…` members), e.g.
   * `x-error-format: oauth` for endpoints that answer OAuth errors rather than problem documents.
   */
  readonly extensions?: Readonly<Record<`x-${string}`, unknown>>;
}

type Output<T> = T extends z.ZodType ? z.output<T> : undefined;

/** A route definition whose handler sees the types its schemas produce. */
export interface RouteDefinition<
  P extends z.ZodType | undefined,
  Q extends z.ZodType | undefined,
  B extends z.ZodType | undefined,
> extends Omit<Route, 'request' | 'handler'> {
  readonly request?: Omit<NonNullable<Route['request']>, 'params' | 'query' | 'body'> & {
    readonly params?: P;
    readonly query?: Q;
    readonly body?: B;
  };
  readonly handler: (
    ctx: RouteContext<
      P extends z.ZodType ? z.output<P> : Record<string, string>,
      Q extends z.ZodType ? z.output<Q> : Record<string, unknown>,
      Output<B>
    >,
  ) => Promise<HandlerResponse> | HandlerResponse;
}

/**
 * Declares a route. The schemas validate the request and describe it in the
 * OpenAPI document; the handler receives their parsed output.
 *
 * @example
 * export const getStatus = defineRoute({
 *   method: 'GET',
 *   path: '/v1/identity/setup/status',
 *   operationId: 'getSetupStatus',
 *   summary: 'Whether the service still needs its first administrator',
 *   auth: 'anonymous',
 *   responses: { 200: { description: 'The setup state', schema: SetupStatus } },
 *   handler: async () => json({ setupRequired: await setup.isRequired() }),
 * });
 */
export function defineRoute<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(definition: RouteDefinition<P, Q, B>): Route {
  return definition as unknown as Route;
}
