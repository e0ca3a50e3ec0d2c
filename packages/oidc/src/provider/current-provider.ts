import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SigningKey, SigningKeyStore } from '@idt/core/knex';
import type Provider from 'oidc-provider';

/** Options of {@link createCurrentProvider}. */
export interface CurrentProviderOptions {
  readonly keys: Pick<SigningKeyStore, 'listKeys'>;
  /** Builds a provider that signs with `keys` (active keys first). */
  readonly build: (keys: SigningKey[]) => Provider;
}

/** The oidc-provider instance serving now: rebuilt when the signing keys change. */
export interface CurrentProvider {
  provider(): Provider;
  /** The current provider's app callback. */
  callback(req: IncomingMessage, res: ServerResponse): unknown;
  /** Rebuilds the provider with the current signing keys (after a rotation in this process). */
  rebuild(): Promise<void>;
  /** Rebuilds the provider when the key set changed: a rotation on any instance reaches this one. */
  followRotation(): Promise<void>;
}

/** Active keys first: the provider signs with the first key of an algorithm. */
function activeFirst(keys: SigningKey[]): SigningKey[] {
  return keys.sort((a, b) => (a.status === b.status ? 0 : a.status === 'active' ? -1 : 1));
}

function keySetOf(keys: readonly SigningKey[]): string {
  return keys.map((key) => `${key.kid}:${key.status}`).join(',');
}

/**
 * Builds the provider with the signing keys of the store, and again each
 * time they change: oidc-provider takes its keys once, when it is created.
 */
export async function createCurrentProvider(options: CurrentProviderOptions): Promise<CurrentProvider> {
  let provider: Provider;
  let callback: (req: IncomingMessage, res: ServerResponse) => unknown;
  let keySet = '';

  async function rebuild(): Promise<void> {
    const keys = activeFirst(await options.keys.listKeys());
    keySet = keySetOf(keys);
    provider = options.build(keys);
    callback = provider.callback();
  }
  await rebuild();

  return {
    provider: () => provider,
    callback: (req, res) => callback(req, res),
    rebuild,
    async followRotation() {
      if (keySetOf(activeFirst(await options.keys.listKeys())) !== keySet) await rebuild();
    },
  };
}
