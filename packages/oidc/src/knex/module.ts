import { silentLogger, systemClock } from '@idt/core';
import type { Knex } from 'knex';
import { composeOidc, type OidcComposition, type OidcOptions } from '../compose.js';
import { clientMetadata } from '../provider/create-provider.js';
import { createKnexAdapterClass, pruneAdapterPayloads } from './adapter.js';
import { createKnexClientStore } from './client-store.js';
import { createKnexProviderStateStore } from './provider-state-store.js';
import { createKnexClientLockout, createKnexConsentStore, createKnexGrantContextStore } from './stores.js';

export type { OidcSettings } from '../compose.js';

/** Options of {@link createKnexOidc}. */
export interface KnexOidcOptions extends OidcOptions {
  readonly db: Knex;
}

/** The OpenID provider module on knex. */
export type KnexOidc = OidcComposition;

/**
 * The OpenID provider on knex: its stores on `db`, handed to
 * {@link composeOidc} (oidc-provider with the knex adapter, the clients
 * service and its routes, the sign-in pages, userinfo, logout with front-
 * and back-channel notification, and the invalid-client lockout).
 *
 * @example
 * const oidc = await createKnexOidc({ db, settings, keys, secret, tokens, invalidator, counter, outbox, verifier, resolver, directory, organizations, endIdentitySession });
 * await oidc.start();
 */
export async function createKnexOidc(options: KnexOidcOptions): Promise<KnexOidc> {
  const { db, invalidator } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const clients = createKnexClientStore(db, invalidator, options.audit);
  return composeOidc(options, {
    clients,
    consents: createKnexConsentStore(db),
    grantContexts: createKnexGrantContextStore(db),
    lockout: createKnexClientLockout({ db, counter: options.counter, invalidator, clock, logger }),
    providerState: createKnexProviderStateStore({
      db,
      outbox: options.outbox,
      invalidator,
      ...(options.audit ? { audit: options.audit } : {}),
    }),
    adapter: (currentRequest) =>
      createKnexAdapterClass({
        db,
        // The provider keeps the instances (patches.ts) and the rate partition the organization: records of
        // 10,000 clients calling tokens need not stay in memory beside them, nor their metadata.
        findClient: (id) => clients.find(id),
        clientMetadata,
        providerKeepsClients: true,
        invalidator,
        clock,
        currentRequest,
        // A rotation's consumption is written with its successor; the provider middleware settles the rest.
        deferConsumption: true,
      }),
    prunePayloads: (now) => pruneAdapterPayloads(db, now),
  });
}
