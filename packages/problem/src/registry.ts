import { type ProblemKind, problemKinds } from './kinds.js';

/** A registered error code: what it means and how it renders. */
export interface ProblemCodeDefinition {
  /** The code itself, dotted PascalCase with exactly one dot (`Area.Reason`). */
  readonly code: string;
  /** The error kind, which decides the HTTP status. */
  readonly kind: ProblemKind;
  /** The HTTP status the code renders with. */
  readonly status: number;
  /** A user-safe sentence used as `detail` when the thrower gives none. */
  readonly description: string;
  /** The package that registered the code, e.g. `@idt/identity`. */
  readonly owner: string;
}

/** What a package supplies for each code it registers. */
export interface ProblemCodeSpec {
  readonly kind: ProblemKind;
  readonly description: string;
}

const CODE_PATTERN = /^[A-Z][A-Za-z0-9]*\.[A-Z][A-Za-z0-9]*$/;

/** Whether a string is a well-formed code: dotted PascalCase, one dot. */
export function isValidProblemCode(code: string): boolean {
  return CODE_PATTERN.test(code);
}

/**
 * A set of error codes. Every package registers its codes once, at import
 * time; the OpenAPI generator reads the registry to emit the `ErrorCode`
 * enum. Registration checks the code format and refuses a code that is
 * already registered with a different meaning.
 */
export class ProblemRegistry {
  readonly #codes = new Map<string, ProblemCodeDefinition>();

  /**
   * Registers codes for one owner. Registering the same code again with the
   * same kind is a no-op, so modules may be loaded twice (tests, bundlers).
   *
   * @throws TypeError when a code is malformed or already registered with another kind.
   */
  register<const T extends Record<string, ProblemCodeSpec>>(owner: string, specs: T): { readonly [K in keyof T]: K } {
    const entries = Object.entries(specs);
    for (const [code, spec] of entries) {
      if (!isValidProblemCode(code)) {
        throw new TypeError(`Problem code "${code}" of ${owner} must be dotted PascalCase with one dot (Area.Reason)`);
      }
      if (!(spec.kind in problemKinds)) {
        throw new TypeError(`Problem code "${code}" of ${owner} has an unknown kind "${String(spec.kind)}"`);
      }
      const existing = this.#codes.get(code);
      if (existing && existing.kind !== spec.kind) {
        throw new TypeError(
          `Problem code "${code}" is already registered by ${existing.owner} as ${existing.kind}, not ${spec.kind}`,
        );
      }
    }
    const names = {} as { [K in keyof T]: K };
    for (const [code, spec] of entries) {
      if (!this.#codes.has(code)) {
        this.#codes.set(code, { code, kind: spec.kind, status: problemKinds[spec.kind], description: spec.description, owner });
      }
      (names as Record<string, string>)[code] = code;
    }
    return names;
  }

  /** The definition of a code, or `undefined` when it is not registered. */
  get(code: string): ProblemCodeDefinition | undefined {
    return this.#codes.get(code);
  }

  /** Whether a code is registered. */
  has(code: string): boolean {
    return this.#codes.has(code);
  }

  /** Every registered code, sorted by code (its UTF-16 code units: the same order whatever the locale). */
  list(): ProblemCodeDefinition[] {
    return [...this.#codes.values()].sort((a, b) => (a.code < b.code ? -1 : a.code > b.code ? 1 : 0));
  }
}

/** The process-wide registry that every idt package registers with. */
export const problemRegistry: ProblemRegistry = new ProblemRegistry();

/**
 * Registers a package's codes with the process-wide registry and returns
 * them as a typed map of constants.
 *
 * @example
 * export const IdentityCodes = registerProblemCodes('@idt/identity', {
 *   'Identity.LastOwner': { kind: 'BusinessRule', description: 'The last owner cannot be removed.' },
 * });
 * throw new ProblemError(IdentityCodes['Identity.LastOwner']);
 */
export function registerProblemCodes<const T extends Record<string, ProblemCodeSpec>>(
  owner: string,
  specs: T,
): { readonly [K in keyof T]: K } {
  return problemRegistry.register(owner, specs);
}
