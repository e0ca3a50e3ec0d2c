import type { Clock, JwtVerifier, Logger, ModuleContext, Principal, RequestHead } from '@idt/core';
import type { CacheInvalidator, WindowCounter } from '@idt/core/knex';
import type { ProblemEnvironment } from '@idt/problem';
import { createHubAuthentication } from './bearer.js';
import { createConnectionTokens } from './connection-tokens.js';
import { createConnectionRegistry } from './connections.js';
import { createMessageDispatcher } from './dispatcher.js';
import { createHubEventHandlers } from './event-handlers.js';
import { createFanOut } from './fan-out.js';
import { createHeartbeat } from './heartbeat.js';
import { createNegotiateRoute } from './negotiate.js';
import './problems.js';
import { HUB_PATH } from './protocol.js';
import { createBroadcastReceiver, notificationEnvelope } from './receiver.js';
import { createSessionEnds } from './session-ends.js';
import type { RealtimeEnvelope, RealtimeHub, RealtimeHubLimits, RealtimeNotification } from './types.js';
import { createHubUpgrade } from './upgrade.js';

export { HUB_PATH, RECEIVE_NOTIFICATION } from './protocol.js';
export { notificationEnvelope } from './receiver.js';

/** SignalR's server defaults. */
export const DEFAULT_HUB_LIMITS: RealtimeHubLimits = {
  keepAliveIntervalMs: 15_000,
  clientTimeoutMs: 30_000,
  handshakeTimeoutMs: 15_000,
  maximumReceiveMessageBytes: 32 * 1024,
  connectionTokenTtlMs: 15_000,
};

/** How long a hub remembers broadcasts it handled, notifications it created and sessions whose end it told. */
const REMEMBER_MS = 60_000;

/** Options of {@link createRealtimeHub}. */
export interface RealtimeHubOptions {
  /** Derives the key that signs connection tokens. */
  readonly secret: string;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Verifies access tokens (for `exp`). */
  readonly verifier: JwtVerifier;
  /** Resolves the caller of a bearer token the way the API does (revocation, membership, permissions). */
  authenticate(request: RequestHead): Promise<Principal | null>;
  /** Makes connection tokens single-use across instances. */
  readonly counter: WindowCounter;
  /** Carries hub messages to every instance (and this one). */
  readonly channel: CacheInvalidator;
  /** For problem documents (exception details only in Development). */
  readonly environment: ProblemEnvironment;
  /** Reads a notification another instance announced, when it was not created here. */
  loadNotification?(id: string): Promise<RealtimeNotification | undefined>;
  readonly limits?: Partial<RealtimeHubLimits>;
}

/**
 * Creates the realtime hub: negotiate, the WebSocket upgrade, the SignalR
 * JSON hub protocol (handshake, invocations with completions, pings, close),
 * groups, and the fan-out of notifications and session ends to every instance.
 *
 * The pieces, each in a file of its own: the connection registry
 * (`connections.ts`), authentication (`bearer.ts`), negotiate
 * (`negotiate.ts`), the upgrade (`upgrade.ts`), the message dispatcher
 * (`dispatcher.ts`), the fan-out between instances (`fan-out.ts`) and what a
 * broadcast does here (`receiver.ts`), the session-end closer
 * (`session-ends.ts`), the heartbeat (`heartbeat.ts`) and the event handlers
 * (`event-handlers.ts`).
 *
 * @example
 * const hub = createRealtimeHub({ secret, clock, logger, verifier, authenticate, counter, channel: invalidator, environment });
 * return { routes: hub.routes, upgrades: [hub.upgrade], handlers: hub.handlers, jobs: hub.jobs };
 */
export function createRealtimeHub(options: RealtimeHubOptions): RealtimeHub {
  const limits: RealtimeHubLimits = { ...DEFAULT_HUB_LIMITS, ...options.limits };
  const { clock, logger } = options;
  const now = () => clock.now().getTime();
  const tokens = createConnectionTokens({ secret: options.secret, clock, ttlMs: limits.connectionTokenTtlMs });
  const authenticate = createHubAuthentication({
    verifier: options.verifier,
    authenticate: (request) => options.authenticate(request),
    now,
  });
  const registry = createConnectionRegistry({ logger, now });
  // Notifications created here, so this instance need not read them back.
  const recent = new Map<string, { envelope: RealtimeEnvelope; until: number }>();
  let closed = false;

  const sessionEnds = createSessionEnds({ rememberMs: REMEMBER_MS, clock, broadcast: (body) => fanOut.broadcast(body) });
  const fanOut = createFanOut({
    channel: options.channel,
    logger,
    rememberMs: REMEMBER_MS,
    now,
    receive: createBroadcastReceiver({
      registry,
      clock,
      createdHere: (id) => recent.get(id)?.envelope,
      loadNotification: async (id) => options.loadNotification?.(id),
      sessionEnded: sessionEnds.remember,
    }),
  });
  const upgrade = createHubUpgrade({
    limits,
    logger,
    environment: options.environment,
    authenticate,
    tokens,
    counter: options.counter,
    registry,
    dispatch: createMessageDispatcher({ registry, limits, now }),
    isClosed: () => closed,
    now,
  });
  const tick = createHeartbeat({
    registry,
    limits,
    now,
    sweeps: [
      (at) => {
        for (const [id, entry] of recent) if (entry.until <= at) recent.delete(id);
      },
      fanOut.sweep,
      sessionEnds.sweep,
    ],
  });

  const hub: RealtimeHub = {
    routes: [createNegotiateRoute({ authenticate, tokens })],
    upgrade: {
      name: 'realtime hub',
      matches: (path) => path === HUB_PATH,
      handle: upgrade.handle,
    },
    handlers: createHubEventHandlers({
      endSession: (sessionId, type) => hub.endSession(sessionId, type),
      closeUser: (userId, closeOptions) => hub.closeUser(userId, closeOptions),
    }),
    jobs: [{ name: 'realtime hub keep-alive', intervalMs: 1000, run: async () => tick() }],
    async notificationCreated(notification) {
      const envelope = notificationEnvelope(notification, clock);
      recent.set(notification.id, { envelope, until: now() + REMEMBER_MS });
      await fanOut.broadcast({ op: 'n', id: notification.id, u: notification.userId, o: notification.organizationId });
    },
    sendToUser: (userId, envelope, sendOptions) =>
      fanOut.broadcast({
        op: 'u',
        u: userId,
        e: envelope,
        ...(sendOptions?.organizationId ? { o: sendOptions.organizationId } : {}),
      }),
    sendToOrganization: (organizationId, envelope) => fanOut.broadcast({ op: 't', o: organizationId, e: envelope }),
    endSession: sessionEnds.endSession,
    closeUser: (userId, closeOptions) =>
      fanOut.broadcast({
        op: 'close',
        u: userId,
        r: closeOptions.reason,
        ...(closeOptions.organizationId ? { o: closeOptions.organizationId } : {}),
        ...(closeOptions.allowReconnect ? { rc: true } : {}),
      }),
    connectionCount: registry.size,
    tick,
    async close() {
      if (closed) return;
      closed = true;
      fanOut.close();
      for (const connection of registry.all()) registry.close(connection, 'The server is shutting down.', true, 1001);
      await upgrade.close();
    },
  };
  return hub;
}

/**
 * The hub of a module set up by `createIdt`: signed with the server secret,
 * authenticating like the API, fanned out over the cache invalidation channel.
 *
 * @example
 * const hub = realtimeHubOf(ctx, (id) => notifications.find(id));
 */
export function realtimeHubOf(
  ctx: Pick<ModuleContext, 'secret' | 'clock' | 'logger' | 'verifier' | 'counter' | 'invalidator' | 'config' | 'authenticate'>,
  loadNotification?: (id: string) => Promise<RealtimeNotification | undefined>,
  limits?: Partial<RealtimeHubLimits>,
): RealtimeHub {
  return createRealtimeHub({
    secret: ctx.secret,
    clock: ctx.clock,
    logger: ctx.logger,
    verifier: ctx.verifier,
    counter: ctx.counter,
    channel: ctx.invalidator,
    environment: ctx.config.environment,
    authenticate: (request) => ctx.authenticate(request),
    ...(loadNotification ? { loadNotification } : {}),
    ...(limits ? { limits } : {}),
  });
}
