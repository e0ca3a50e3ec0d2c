import {
  type AnyIdtModule,
  type Clock,
  createIdt,
  createManualClock,
  type Idt,
  type IdtConfigOverrides,
  type IdtModule,
  loadConfig,
  type Mailer,
  type ManualClock,
} from '@idt/core';
import { type IdentityModuleSettings, type IdentityServices, identity } from '@idt/identity';
import { type InquiriesServices, inquiries } from '@idt/inquiries';
import { type NotificationsServices, notifications } from '@idt/notifications';
import { type OidcModuleOptions, type OidcModuleSettings, type OidcServices, oidc } from '@idt/oidc';
import { type PlatformOptions, type PlatformServices, platform } from '@idt/platform';
import { type SsoOptions, type SsoServices, type SsoSettings, sso } from '@idt/sso';
import { type StorageServices, type StorageSettings, storage } from '@idt/storage';
import { createTestDatabase, type TestDatabase, type TestDialect } from './database.js';

/** The origin an in-process idt answers under: nothing listens there, {@link TestIdt.send} answers it. */
export const TEST_ORIGIN = 'http://idt.test';

/**
 * Test instances run in the Testing environment, which enforces rate limits;
 * suites that are not about rate limiting get limits they never reach, and
 * rate-limit suites set their own through `env`.
 */
export const GENEROUS_RATE_LIMITS: Readonly<Record<string, string>> = Object.fromEntries(
  ['AUTH', 'UPLOAD', 'REGISTRATION', 'GLOBAL'].map((policy) => [`IDT_RATE_LIMIT_${policy}_PERMIT_LIMIT`, '100000']),
);

/** The reference set of modules, built from the packages' factories (not from `examples/`). */
export type TestReferenceModules = readonly [
  IdtModule<'identity', IdentityServices, IdentityModuleSettings>,
  IdtModule<'oidc', OidcServices, OidcModuleSettings>,
  IdtModule<'inquiries', InquiriesServices>,
  IdtModule<'storage', StorageServices, StorageSettings>,
  IdtModule<'notifications', NotificationsServices>,
  IdtModule<'platform', PlatformServices>,
  IdtModule<'sso', SsoServices, SsoSettings>,
];

/** A composition of the reference modules, as the test toolkit's helpers see it. */
export type TestReferenceIdt = Idt<TestReferenceModules>;

/** Options of the reference modules' factories. */
export interface TestModuleOptions {
  /** Options of `oidc()`, e.g. `{ logs: { sink } }` or `backchannelLimits`. */
  readonly oidc?: OidcModuleOptions;
  /** Options of `platform()`, e.g. extra setting definitions. */
  readonly platform?: PlatformOptions;
  /** Options of `sso()`, e.g. a TXT resolver. */
  readonly sso?: SsoOptions;
}

/** The reference modules: identity, oidc, inquiries, storage, notifications, platform and sso. */
export function testReferenceModules(options: TestModuleOptions = {}): TestReferenceModules {
  return [
    identity(),
    oidc(options.oidc),
    inquiries(),
    storage(),
    notifications(),
    platform(options.platform),
    sso(options.sso),
  ] as const;
}

/**
 * What the toolkit's helpers (`caller`, `seedWorld`, `bootstrapAdmin`,
 * `discover`, ...) need of a running idt: an in-process {@link TestIdt} or a
 * {@link TestServer} on a loopback port.
 */
export interface TestHost {
  /** The base URL (the issuer), path prefix included. */
  readonly url: string;
  /** The origin of {@link url}. */
  readonly origin: string;
  readonly idt: TestReferenceIdt;
  readonly database: TestDatabase;
  /** Sends a request relative to {@link url}. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /**
   * A `fetch`-compatible function that reaches this idt: hand it to
   * openid-client (`customFetch`), to a `Browser`, or call it with absolute URLs.
   */
  readonly send: typeof fetch;
  /** Stops the instance and deletes the database (unless it was passed in). */
  close(): Promise<void>;
}

/** Options of {@link createTestIdt}. */
export interface TestIdtOptions<Modules extends readonly AnyIdtModule[], C extends Clock> {
  /** The modules to compose; the reference set ({@link testReferenceModules}) by default. */
  readonly modules?: Modules;
  /** Options of the reference modules' factories (when {@link modules} is not given). */
  readonly moduleOptions?: TestModuleOptions;
  readonly dialect?: TestDialect;
  /** Environment variables the configuration is read from (beside the test defaults). */
  readonly env?: Record<string, string>;
  /** Settings applied over the environment. */
  readonly config?: IdtConfigOverrides;
  /** Skip migrations (to test the pending-migration refusal). */
  readonly migrate?: boolean;
  /** Reuse an existing database instead of creating one. */
  readonly database?: TestDatabase;
  /**
   * The clock every policy reads. By default a manual clock standing at the
   * whole second the instance was created in; move it with `advance`. Pass a
   * `createSkippingClock()` where time must keep flowing (oidc-provider's own
   * `Date.now()` stamps what a watermark of the clock is compared with).
   */
  readonly clock?: C;
  readonly mailer?: Mailer;
}

/** A composed idt answering in-process through `idt.fetch`, over a throwaway database. */
export interface TestIdt<Modules extends readonly AnyIdtModule[] = TestReferenceModules, C extends Clock = ManualClock> {
  /** The base URL, prefix included, under {@link TEST_ORIGIN} (or the configured issuer). */
  readonly url: string;
  /** The origin of {@link url}. */
  readonly origin: string;
  readonly idt: Idt<Modules>;
  readonly database: TestDatabase;
  /** The clock the instance reads. */
  readonly clock: C;
  /** Sends a request relative to {@link url} through `idt.fetch`. */
  fetch(path: string, init?: RequestInit): Promise<Response>;
  /**
   * A `fetch`-compatible function: URLs on {@link origin} are answered
   * in-process (redirects followed unless `redirect: 'manual'`), any other
   * URL goes out through the global `fetch`.
   */
  readonly send: typeof fetch;
  /** Stops background work and deletes the database (unless it was passed in). */
  close(): Promise<void>;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * Composes idt modules in-process, the way `app.request()` serves a Hono app:
 * a fresh migrated database (SQLite by default), the Testing environment with
 * rate limits no suite reaches, a manual clock, and no socket. Use
 * `startTestServer` once per surface where the real socket matters.
 *
 * @example
 * const server = await createTestIdt();
 * const response = await server.fetch('/v1/identity/setup/status');
 * server.clock.advance(61_000);
 * await server.close();
 */
export async function createTestIdt<
  const Modules extends readonly AnyIdtModule[] = TestReferenceModules,
  C extends Clock = ManualClock,
>(options: TestIdtOptions<Modules, C> = {}): Promise<TestIdt<Modules, C>> {
  const database = options.database ?? (await createTestDatabase(options.dialect ?? 'sqlite'));
  try {
    const env = { ...GENEROUS_RATE_LIMITS, ...options.env };
    const config = loadConfig(
      { IDT_ENVIRONMENT: 'Testing', IDT_LOG_LEVEL: 'silent', IDT_DATA_DIR: database.dataDir, ...env },
      { databaseUrl: database.url, issuer: TEST_ORIGIN, ...options.config },
      { hasMailer: options.mailer !== undefined },
    );
    const clock = options.clock ?? (createManualClock(Math.floor(Date.now() / 1000) * 1000) as Clock as C);
    const modules = options.modules ?? (testReferenceModules(options.moduleOptions) as readonly AnyIdtModule[] as Modules);
    const idt = await createIdt({
      modules,
      resolvedConfig: config,
      env,
      database: database.db,
      migrations: options.migrate === false ? 'skip' : 'run',
      clock,
      ...(options.mailer ? { mailer: options.mailer } : {}),
    });
    idt.start();
    const url = config.publicBaseUrl;
    const origin = new URL(url).origin;
    const send = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      let request = new Request(input, init);
      for (let hop = 0; hop <= 20; hop++) {
        if (new URL(request.url).origin !== origin) return fetch(request);
        const response = await answer(idt, request);
        const location = response.headers.get('location');
        if (request.redirect !== 'follow' || !REDIRECTS.has(response.status) || !location) return response;
        const next = new URL(location, request.url);
        const keepsMethod = response.status === 307 || response.status === 308;
        // A body already sent cannot be sent again: the redirect is the answer then.
        if (keepsMethod && request.body) return response;
        request = keepsMethod
          ? new Request(next, request)
          : new Request(next, {
              method: request.method === 'HEAD' ? 'HEAD' : 'GET',
              headers: withoutBodyHeaders(request.headers),
              signal: request.signal,
            });
      }
      throw new TypeError(`fetch failed: too many redirects from ${request.url}`);
    };
    return {
      url,
      origin,
      idt,
      database,
      clock,
      fetch: (path, init) => send(`${url}${path}`, init),
      send,
      async close() {
        await idt.close();
        if (!options.database) await database.destroy();
      },
    };
  } catch (error) {
    if (!options.database) await database.destroy();
    throw error;
  }
}

/**
 * One request through `idt.fetch`, as a peer on 127.0.0.1. Like `fetch`, it
 * rejects with the signal's reason when the request's signal aborts (the
 * client going away), and the pipeline sees the client gone.
 */
function answer(idt: Idt<readonly AnyIdtModule[]>, request: Request): Promise<Response> {
  const { signal } = request;
  if (signal.aborted) return Promise.reject(signal.reason);
  const answered = idt.fetch(withAbortableBody(request), {
    remoteAddress: '127.0.0.1',
    signal,
    clientClosed: () => signal.aborted,
  });
  return new Promise<Response>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    answered.then(
      (response) => {
        signal.removeEventListener('abort', abort);
        if (signal.aborted) reject(signal.reason);
        else resolve(response);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(error);
      },
    );
  });
}

/**
 * The request with a body that errors when its signal aborts: the body a
 * client was still sending ends with the client, as it would on a socket.
 */
function withAbortableBody(request: Request): Request {
  const { body, signal } = request;
  if (!body) return request;
  const reader = body.getReader();
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      signal.addEventListener(
        'abort',
        () => {
          controller.error(signal.reason);
          reader.cancel(signal.reason).catch(() => undefined);
        },
        { once: true },
      );
    },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Request(request.url, {
    method: request.method,
    headers: request.headers,
    body: stream,
    signal,
    redirect: request.redirect,
    duplex: 'half',
  });
}

/** A redirected request's headers once its body is dropped (as the Fetch standard's redirect steps do). */
function withoutBodyHeaders(headers: Headers): Headers {
  const kept = new Headers(headers);
  for (const name of ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location']) {
    kept.delete(name);
  }
  return kept;
}
