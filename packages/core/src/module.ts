import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Knex } from 'knex';
import type { AuditTrail } from './audit/trail.js';
import type { CredentialResolver } from './auth/authenticator.js';
import type { JwtVerifier } from './auth/jwt.js';
import type { Principal } from './auth/principal.js';
import type { CacheInvalidator } from './cache/invalidator.js';
import type { Clock } from './clock.js';
import type { IdtConfig } from './config/config.js';
import type { Env } from './config/env.js';
import type { MigrationSet } from './db/migrations.js';
import type { EventBus } from './events/bus.js';
import type { EventDefinition, EventHandlerDefinition } from './events/types.js';
import type { RequestGate, RequestInfo, RequestRateLimiter } from './http/app.js';
import type { RequestHead } from './http/light.js';
import type { NodeSurfaceHandler } from './http/node-adapter.js';
import type { Route } from './http/route.js';
import type { SigningKeyStore } from './keys/store.js';
import type { Logger } from './logger.js';
import type { Mailer } from './mail/mailer.js';
import type { WindowCounter } from './rate-limit/window-counter.js';

export type { Env };

/** One environment variable a module reads, for `idt env` and the configuration guide. */
export interface EnvironmentVariable {
  readonly name: string;
  readonly description: string;
  /** The value used when the variable is unset, as text. */
  readonly default?: string;
}

/**
 * A module's settings: the variables it reads and how they become typed
 * settings. Options passed to the module's factory win over the environment.
 */
export interface ModuleSettingsSpec<Settings> {
  readonly variables: readonly EnvironmentVariable[];
  /**
   * Reads the settings from the environment and the deployment's core
   * configuration.
   *
   * @throws ConfigError listing every invalid setting (createIdt reports the problems of every module at once).
   */
  resolve(env: Env, config: IdtConfig): Settings;
}

/** A periodic task of a module (pruning, publishing, following another instance's changes). */
export interface ModuleJob {
  readonly name: string;
  readonly intervalMs: number;
  run(): Promise<unknown>;
}

export type { NodeSurfaceHandler };

/**
 * A surface that is not a {@link Route}: a handler with its own HTTP stack,
 * such as the OpenID provider (`/.well-known/*`, `/connect/*`) and the sign-in
 * pages. It is tried before the routes, through both entry points: a surface
 * with only a node handler is reached from `fetch` through a bridge.
 */
export interface ModuleSurface {
  /** What it serves, for logs. */
  readonly name: string;
  /** Whether it may answer this path (without the deployment prefix); cheap and synchronous. */
  matches(path: string): boolean;
  /** The node handler. */
  readonly node?: NodeSurfaceHandler;
  /** A Fetch handler; resolves `undefined` to decline. Used by `fetch` when present. */
  readonly fetch?: (request: Request, info?: RequestInfo) => Promise<Response | undefined>;
}

/**
 * A protocol upgrade a module takes over (the realtime hub's WebSockets):
 * node:http's `upgrade` event, routed by path like a {@link ModuleSurface}.
 */
export interface ModuleUpgrade {
  /** What it serves, for logs. */
  readonly name: string;
  /** Whether it takes this path (without the deployment prefix); cheap and synchronous. */
  matches(path: string): boolean;
  /**
   * Takes the socket: answers it (an HTTP error, or the switch of protocols)
   * and owns it from then on. Must not throw; a rejection destroys the socket.
   */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): void | Promise<void>;
}

/** Authentication a module contributes: how bearer tokens, API keys and session cookies become principals. */
export interface ModuleAuthentication {
  readonly resolver: CredentialResolver;
  /** The sign-in session cookie the API also accepts (same-origin requests only). */
  readonly sessionCookieName?: string;
}

/** What every module is set up with. */
export interface ModuleBaseContext {
  readonly db: Knex;
  /** The deployment's core configuration (environment, URLs, prefix, proxy, rate limits, mail). */
  readonly config: IdtConfig;
  readonly env: Env;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly mailer: Mailer;
  /** The server secret: encrypts signing keys, derives cookie and link keys. */
  readonly secret: string;
  /** The event bus; modules write integration events to its outbox inside their transactions. */
  readonly events: EventBus;
  /**
   * The audit trail: modules register their actions at set-up
   * (`ctx.audit.register`) and record in the transaction of the change they
   * record (`ctx.audit.record(entries, trx)`), as they publish events.
   */
  readonly audit: AuditTrail;
  readonly invalidator: CacheInvalidator;
  /** Anchored fixed-window counters (per-user and per-address limits). */
  readonly counter: WindowCounter;
  readonly keys: SigningKeyStore;
  /** Verifies the access tokens this deployment issues. */
  readonly verifier: JwtVerifier;
  /** The request rate limiter; absent in Development (SPEC 8.1). */
  readonly rateLimiter?: RequestRateLimiter;
}

/** What a module's `setup` receives. */
export interface ModuleContext<Settings = unknown> extends ModuleBaseContext {
  /** The module's resolved settings. */
  readonly settings: Settings;
  /**
   * The services of a module set up earlier (one named in `requires`, or in
   * `optional` and present).
   *
   * @throws Error when that module is not part of the composition.
   */
  module<T = unknown>(id: string): T;
  /** Whether a module is part of the composition. */
  has(id: string): boolean;
  /** A capability another module provides (see {@link IdtModule.provides}), or `undefined`. */
  capability<T = unknown>(name: string): T | undefined;
  /**
   * Reads the credential of a request head the way the API does (`X-Api-Key`,
   * `Authorization: Bearer`, the session cookie), with the composition's
   * authenticator. For surfaces the route pipeline does not serve, such as a
   * WebSocket upgrade. Usable once `createIdt` has resolved (at request time).
   *
   * @returns `null` when the head carries no credential, or no module authenticates.
   * @throws UnauthorizedError when it carries an invalid one.
   */
  authenticate(request: RequestHead): Promise<Principal | null>;
}

/** A module, set up: what it adds to the composition. */
export interface ModuleInstance<Services = unknown> {
  /** The module's typed services, reachable as `idt.services[id]`. */
  readonly services: Services;
  readonly routes?: readonly Route[];
  readonly surfaces?: readonly ModuleSurface[];
  /** Protocol upgrades (WebSockets) the module takes; `listen` and {@link Idt.upgrade} route them. */
  readonly upgrades?: readonly ModuleUpgrade[];
  /** Events the module publishes (registered for the catalog and payload checks). */
  readonly events?: readonly EventDefinition<any>[];
  /** Handlers subscribed on the event bus. */
  readonly handlers?: readonly EventHandlerDefinition<any>[];
  readonly jobs?: readonly ModuleJob[];
  /** Checks run before routing (e.g. the setup gate). */
  readonly gates?: readonly RequestGate[];
  readonly authentication?: ModuleAuthentication;
  /** Called after the signing keys rotated in this process. */
  onSigningKeysRotated?(): Promise<void>;
  /** Releases what the module holds; called by `close()` in reverse set-up order. */
  close?(): Promise<void>;
}

/**
 * The contract every idt package implements: a module factory
 * (`identity()`, `oidc()`, `storage()`...) returns one of these, and
 * `createIdt` composes any set of them.
 *
 * @example
 * export function greetings(): IdtModule<'greetings', { hello(): string }> {
 *   return {
 *     id: 'greetings',
 *     setup: () => ({ services: { hello: () => 'hello' }, routes: [] }),
 *   };
 * }
 */
export interface IdtModule<Id extends string = string, Services = unknown, Settings = unknown> {
  readonly id: Id;
  /** Modules that must be part of the composition and are set up first. */
  readonly requires?: readonly string[];
  /** Modules set up first when present. */
  readonly optional?: readonly string[];
  /** The module's schema migrations (own migrations table); `idt migrate` runs them. */
  readonly migrations?: MigrationSet;
  /** The problem codes the module answers with (documentation; they are registered on import). */
  readonly problemCodes?: readonly string[];
  readonly settings?: ModuleSettingsSpec<Settings>;
  /**
   * Capabilities built from the base context before any module is set up, so
   * that a module set up earlier can use a later one's port without a cycle
   * (the identity module asks the provider's client store about OAuth clients).
   */
  readonly provides?: Readonly<Record<string, (ctx: ModuleBaseContext) => unknown>>;
  setup(ctx: ModuleContext<Settings>): ModuleInstance<Services> | Promise<ModuleInstance<Services>>;
}

/** Any module. */
export type AnyIdtModule = IdtModule<string, any, any>;

/** The services of a module type. */
export type ServicesOf<M> = M extends IdtModule<string, infer S, any> ? S : never;

/** The typed services of a module list, keyed by module id. */
export type ServicesMap<Modules extends readonly AnyIdtModule[]> = {
  readonly [M in Modules[number] as M['id']]: ServicesOf<M>;
};

/**
 * Orders modules so that every module comes after the ones it requires
 * (and the optional ones present); keeps the given order otherwise.
 *
 * @throws Error naming a missing required module, a duplicate id or a cycle.
 */
export function orderModules<M extends AnyIdtModule>(modules: readonly M[]): M[] {
  const byId = new Map<string, M>();
  for (const module of modules) {
    if (byId.has(module.id)) throw new Error(`Module "${module.id}" is listed twice`);
    byId.set(module.id, module);
  }
  for (const module of modules) {
    for (const required of module.requires ?? []) {
      if (!byId.has(required)) {
        throw new Error(`Module "${module.id}" requires the "${required}" module: add ${required}() to modules`);
      }
    }
  }
  const ordered: M[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (module: M, path: string[]) => {
    const seen = state.get(module.id);
    if (seen === 'done') return;
    if (seen === 'visiting') throw new Error(`Modules depend on each other in a cycle: ${[...path, module.id].join(' → ')}`);
    state.set(module.id, 'visiting');
    for (const dependency of [...(module.requires ?? []), ...(module.optional ?? [])]) {
      const found = byId.get(dependency);
      if (found) visit(found, [...path, module.id]);
    }
    state.set(module.id, 'done');
    ordered.push(module);
  };
  for (const module of modules) visit(module, []);
  return ordered;
}
