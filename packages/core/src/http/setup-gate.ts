import { ProblemError } from '@idt/problem';
import type { RequestGate } from './app.js';

/** The paths that stay reachable while setup is required (SPEC 3.1). */
export const SETUP_ALLOWLIST: readonly string[] = Object.freeze([
  '/v1/identity/setup',
  '/health',
  '/.well-known',
  '/connect',
  '/openapi',
  '/scalar',
  // Browsers ask for it on every page, the setup page included.
  '/favicon.ico',
]);

/**
 * The `detail` of `Setup.Required`: what to run to finish setup, with the
 * setup route under the deployment's path `prefix` (`''` or `/idt`). Shown
 * on the 503 itself (unlike other 5xx details, see `EXPOSED_SERVER_CODES` of
 * `app.ts`): it is an expected state with a fix, not a failure.
 *
 * @example
 * setupRequiredDetail('/idt'); // '… or POST /idt/v1/identity/setup/admin with …'
 */
export function setupRequiredDetail(prefix = ''): string {
  return (
    'Setup is not finished: this service has no administrator yet. Run `npx idt setup` in the project directory ' +
    `(or \`npx idt demo\` for a ready-made demo), or POST ${prefix}/v1/identity/setup/admin with ` +
    '{"email","password","firstName","lastName","organizationName"}; see docs/cli.md#idt-setup. Every other path answers 503 until then.'
  );
}

/** {@link setupRequiredDetail} of a deployment without a path prefix. */
export const SETUP_REQUIRED_DETAIL = setupRequiredDetail();

/** Whether a prefix-free path is `base` itself or below it (segment-wise). */
export function isPathUnder(path: string, base: string): boolean {
  return path === base || path.startsWith(`${base}/`);
}

/**
 * {@link isPathUnder} for a fixed list of bases, for paths asked on every
 * request: the bases and their `base/` prefixes are computed once.
 *
 * @example
 * const isProviderPath = pathsUnder(['/connect/token', '/connect/revoke']);
 * isProviderPath('/connect/token'); // true
 * isProviderPath('/connect/tokens'); // false
 */
export function pathsUnder(bases: readonly string[]): (path: string) => boolean {
  const exact = new Set(bases);
  const prefixes = bases.map((base) => `${base}/`);
  return (path) => {
    if (exact.has(path)) return true;
    for (const prefix of prefixes) if (path.startsWith(prefix)) return true;
    return false;
  };
}

/** Options of {@link createSetupGate}. */
export interface SetupGateOptions {
  /** Whether the service still needs its first administrator; asked on every gated request until it answers false. */
  isSetupRequired(): Promise<boolean>;
  /** Paths that stay reachable; {@link SETUP_ALLOWLIST} by default. */
  allowlist?: readonly string[];
}

/**
 * The setup gate: while setup is required, every path outside the allowlist
 * answers 503 `Setup.Required`. Until then every gated request asks again,
 * so a setup done elsewhere (the `idt` CLI, another instance) lifts the gate
 * on the very next request; once set up, it never asks again (setup cannot
 * be undone) and costs nothing.
 */
export function createSetupGate(options: SetupGateOptions): RequestGate {
  const allowed = pathsUnder(options.allowlist ?? SETUP_ALLOWLIST);
  let setUp = false;
  const check = async (prefix: string) => {
    if (await options.isSetupRequired()) {
      throw new ProblemError('Setup.Required', setupRequiredDetail(prefix), { headers: { 'retry-after': '10' } });
    }
    setUp = true;
  };
  return ({ path, prefix }) => {
    if (setUp || allowed(path)) return;
    return check(prefix);
  };
}
