import { afterAll, beforeAll, vi } from 'vitest';

/**
 * Keeps oidc-provider's own notices off the test output in a suite that
 * builds stock providers on its development defaults (an in-memory adapter,
 * generated keys), which it announces on `console.warn`. Other warnings
 * still print. Call it at the top of the suite.
 */
export function quietStockProviderWarnings(): void {
  let restore: (() => void) | undefined;
  beforeAll(() => {
    const warn = console.warn.bind(console);
    const spy = vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].startsWith('oidc-provider WARNING:')) return;
      warn(...args);
    });
    restore = () => spy.mockRestore();
  });
  afterAll(() => restore?.());
}
