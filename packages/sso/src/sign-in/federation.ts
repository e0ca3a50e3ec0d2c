import type { SignInFederation } from '@idt/oidc';
import type { createBegin } from './begin.js';
import type { RealmRouting } from './home-realm.js';
import type { OutcomeTaking } from './outcomes.js';

/**
 * The {@link SignInFederation} the sso module puts in oidc's slot: realm
 * routing from the cached snapshot, `begin` (the transaction and the
 * redirect), and the taking of outcomes.
 *
 * @example
 * slot.current = createSignInFederation(createRealmRouting(realms), createBegin(options), createOutcomeTaking(options));
 */
export function createSignInFederation(
  routing: RealmRouting,
  begin: ReturnType<typeof createBegin>,
  taking: OutcomeTaking,
): SignInFederation {
  return {
    identifierFirst: routing.identifierFirst,
    platformConnections: routing.platformConnections,
    homeRealm: routing.homeRealm,
    organizationRealm: routing.organizationRealm,
    begin,
    consume: taking.consume,
    consumeUnsolicited: taking.consumeUnsolicited,
    link: taking.link,
  };
}
