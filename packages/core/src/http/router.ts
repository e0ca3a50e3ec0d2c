import { decodeComponent } from './body.js';
import type { HttpMethod, Route } from './route.js';

/** A route matched against a path, with its percent-decoded path parameters. */
export interface RouteMatch {
  readonly route: Route;
  readonly params: Record<string, string>;
  /**
   * Parameters that could not be decoded (malformed escapes, bytes that are
   * not UTF-8, a NUL character); absent when every one was. The pipeline
   * answers 400 naming them.
   */
  readonly unsafe?: readonly string[];
}

/** The result of looking a request up: a match, a 405 with the allowed methods, or a 404. */
export type RouteLookup =
  | { readonly kind: 'match'; readonly match: RouteMatch }
  | { readonly kind: 'method-not-allowed'; readonly allowed: HttpMethod[] }
  | { readonly kind: 'not-found' };

interface CompiledPath {
  readonly path: string;
  readonly pattern: RegExp | null;
  readonly names: string[];
  readonly methods: Map<HttpMethod, Route>;
}

const PARAM = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Matches requests to routes. Static paths are a map lookup; parameterized
 * paths are tried in declaration order after the static ones, so
 * `/v1/inquiries/submitted` wins over `/v1/inquiries/{id}`.
 */
export class Router {
  readonly #static = new Map<string, CompiledPath>();
  readonly #dynamic: CompiledPath[] = [];
  readonly #operationIds = new Set<string>();

  constructor(routes: readonly Route[] = []) {
    for (const route of routes) this.add(route);
  }

  /**
   * Adds a route.
   *
   * @throws Error when the method and path, or the operation id, are taken.
   */
  add(route: Route): void {
    if (!route.path.startsWith('/')) throw new Error(`Route path "${route.path}" must start with /`);
    if (this.#operationIds.has(route.operationId)) throw new Error(`Duplicate operationId "${route.operationId}"`);
    // Documented for another surface (the provider's own endpoints): never matched here.
    if (route.documentationOnly) {
      this.#operationIds.add(route.operationId);
      return;
    }
    const names = [...route.path.matchAll(PARAM)].map((m) => m[1] as string);
    let compiled = names.length === 0 ? this.#static.get(route.path) : this.#dynamic.find((c) => c.path === route.path);
    if (!compiled) {
      const pattern =
        names.length === 0
          ? null
          : new RegExp(
              `^${route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[A-Za-z_][A-Za-z0-9_]*\\?\}/g, '([^/]+)')}$`,
            );
      compiled = { path: route.path, pattern, names, methods: new Map() };
      if (names.length === 0) this.#static.set(route.path, compiled);
      else this.#dynamic.push(compiled);
    }
    if (compiled.methods.has(route.method)) throw new Error(`Duplicate route ${route.method} ${route.path}`);
    compiled.methods.set(route.method, route);
    this.#operationIds.add(route.operationId);
  }

  /** Looks a method and a prefix-free path up. `HEAD` falls back to `GET`. */
  lookup(method: string, path: string): RouteLookup {
    const wanted = (method === 'HEAD' ? 'GET' : method) as HttpMethod;
    const exact = this.#static.get(path);
    const direct = exact?.methods.get(wanted);
    // A static path that has the method wins outright: no pattern needs trying.
    if (direct) return { kind: 'match', match: { route: direct, params: {} } };
    const candidates: Array<{ compiled: CompiledPath; params: Record<string, string>; unsafe?: string[] }> = [];
    if (exact) candidates.push({ compiled: exact, params: {} });
    for (const compiled of this.#dynamic) {
      const match = compiled.pattern?.exec(path);
      if (!match) continue;
      const params: Record<string, string> = {};
      let unsafe: string[] | undefined;
      compiled.names.forEach((name, index) => {
        const raw = match[index + 1] ?? '';
        const decoded = decodeComponent(raw);
        params[name] = decoded ?? raw;
        if (decoded !== undefined) return;
        unsafe ??= [];
        unsafe.push(name);
      });
      candidates.push(unsafe ? { compiled, params, unsafe } : { compiled, params });
    }
    if (candidates.length === 0) return { kind: 'not-found' };
    for (const candidate of candidates) {
      const route = candidate.compiled.methods.get(wanted);
      if (route) {
        const { params, unsafe } = candidate;
        return { kind: 'match', match: unsafe ? { route, params, unsafe } : { route, params } };
      }
    }
    for (const { compiled, params, unsafe } of candidates) {
      for (const route of compiled.methods.values()) {
        if (route.otherMethods) return { kind: 'match', match: unsafe ? { route, params, unsafe } : { route, params } };
      }
    }
    const allowed = new Set<HttpMethod>();
    for (const candidate of candidates) for (const m of candidate.compiled.methods.keys()) allowed.add(m);
    return { kind: 'method-not-allowed', allowed: [...allowed].sort() };
  }

  /** Every route, in the order added. */
  routes(): Route[] {
    return [...this.#static.values(), ...this.#dynamic].flatMap((compiled) => [...compiled.methods.values()]);
  }
}
