import { AUDIT_ACTION_PATTERN, AuditEntryError } from './entry.js';

/** An action the audit trail records: its dotted name, the module that records it and what it means. */
export interface AuditActionDefinition {
  /** `identity.password.reset`: area, then object, then a past-tense or imperative verb. */
  readonly action: string;
  /** The recording module, e.g. `identity`. */
  readonly module: string;
  readonly description: string;
  /** The type of the record's target, when it has one (`user`, `client`). */
  readonly targetType?: string;
}

/**
 * Declares a module's audit actions, to register with `ctx.audit.register`.
 *
 * @example
 * export const PasswordAuditActions = defineAuditActions('identity', {
 *   passwordReset: { action: 'identity.password.reset', description: 'A password was reset with a link or by an operator.', targetType: 'user' },
 * });
 * ctx.audit.register(Object.values(PasswordAuditActions));
 * await ctx.audit.record({ action: PasswordAuditActions.passwordReset.action, … }, trx);
 */
export function defineAuditActions<const Names extends string>(
  module: string,
  actions: Record<Names, Omit<AuditActionDefinition, 'module'>>,
): Readonly<Record<Names, AuditActionDefinition>> {
  const defined = {} as Record<Names, AuditActionDefinition>;
  for (const [name, action] of Object.entries(actions) as Array<[Names, Omit<AuditActionDefinition, 'module'>]>) {
    defined[name] = Object.freeze({ ...action, module });
  }
  return Object.freeze(defined);
}

/** The one list of actions the audit trail knows: modules contribute theirs at set-up. */
export interface AuditActionRegistry {
  /**
   * Adds actions; registering the same definition again is a no-op.
   *
   * @throws AuditEntryError for a malformed name, or a name another module already registered.
   */
  register(actions: readonly AuditActionDefinition[]): void;
  /** The definition of an action, or `undefined`. */
  get(action: string): AuditActionDefinition | undefined;
  /** Every registered action, sorted by name (the catalog `docs/audit.md` describes). */
  list(): AuditActionDefinition[];
}

/** Creates an empty registry. */
export function createAuditActionRegistry(): AuditActionRegistry {
  const actions = new Map<string, AuditActionDefinition>();
  return {
    register(definitions) {
      for (const definition of definitions) {
        if (!AUDIT_ACTION_PATTERN.test(definition.action) || definition.action.length > 200) {
          throw new AuditEntryError(`Audit action ${JSON.stringify(definition.action)} is not a dotted lowercase name`);
        }
        const known = actions.get(definition.action);
        if (known && (known.module !== definition.module || known.description !== definition.description)) {
          throw new AuditEntryError(`Audit action ${definition.action} is already registered by module ${known.module}`);
        }
        actions.set(definition.action, definition);
      }
    },
    get: (action) => actions.get(action),
    list: () => [...actions.values()].sort((a, b) => (a.action < b.action ? -1 : a.action > b.action ? 1 : 0)),
  };
}
