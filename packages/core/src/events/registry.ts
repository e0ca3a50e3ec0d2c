import type { Payload } from './outbox-rows.js';
import type { EventCatalog, EventDefinition, EventHandlerDefinition } from './types.js';

const MAX_NAME_LENGTH = 200;

/**
 * Refuses an empty name or one longer than the outbox columns keep.
 *
 * @throws TypeError naming `kind` when `value` is not such a string.
 */
export function checkName(kind: string, value: string): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    throw new TypeError(
      `${kind} must be a non-empty string of at most ${MAX_NAME_LENGTH} characters, got ${JSON.stringify(value)}`,
    );
  }
}

/** The event types and handlers one bus knows: what it writes deliveries for and what it claims. */
export interface EventRegistry {
  /** @throws Error when another definition already uses the same type. */
  register<T extends Payload>(event: EventDefinition<T>): void;
  /** Registers the handler's event type too. @throws Error when a handler of the same name is already subscribed. */
  subscribe<T extends Payload>(handler: EventHandlerDefinition<T>): void;
  /** The subscribed handler of that name. */
  handler(name: string): EventHandlerDefinition | undefined;
  /** The names of every subscribed handler (the deliveries this bus may claim). */
  handlerNames(): string[];
  /** The names of the handlers of events of `type`, in subscription order (one delivery each). */
  subscribersOf(type: string): string[];
  /** Every registered event and subscribed handler. */
  catalog(): EventCatalog;
}

/** Creates an empty registry. */
export function createEventRegistry(): EventRegistry {
  const events = new Map<string, EventDefinition>();
  const handlers = new Map<string, EventHandlerDefinition>();

  function register<T extends Payload>(event: EventDefinition<T>): void {
    checkName('An event type', event.type);
    const known = events.get(event.type);
    if (known === undefined) {
      events.set(event.type, event as unknown as EventDefinition);
    } else if (known !== (event as unknown as EventDefinition)) {
      throw new Error(`Event type ${event.type} is already registered by another definition (module ${known.module})`);
    }
  }

  return {
    register,
    subscribe(handler) {
      checkName('An event handler name', handler.name);
      if (handlers.has(handler.name)) throw new Error(`An event handler named ${handler.name} is already subscribed`);
      if (typeof handler.handle !== 'function') throw new TypeError(`Event handler ${handler.name} has no handle function`);
      register(handler.event);
      handlers.set(handler.name, handler as unknown as EventHandlerDefinition);
    },
    handler: (name) => handlers.get(name),
    handlerNames: () => [...handlers.keys()],
    subscribersOf(type) {
      const names: string[] = [];
      for (const handler of handlers.values()) if (handler.event.type === type) names.push(handler.name);
      return names;
    },
    catalog() {
      return {
        events: [...events.values()],
        handlers: [...handlers.values()].map((handler) => ({
          name: handler.name,
          module: handler.module,
          event: handler.event.type,
          ...(handler.description !== undefined ? { description: handler.description } : {}),
        })),
      };
    },
  };
}
