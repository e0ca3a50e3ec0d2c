import type { HomeRealm, SignInFederation } from '@idt/oidc';
import { normalizeDomain } from '../domains/domain-name.js';
import type { RealmCache } from './realm-cache.js';

/** The routing half of {@link SignInFederation}: answered from the realm snapshot, no database round trip while it is cached. */
export type RealmRouting = Pick<SignInFederation, 'identifierFirst' | 'platformConnections' | 'homeRealm' | 'organizationRealm'>;

/** The normalised domain of an address; `undefined` when it has none. */
function domainOfAddress(email: string): string | undefined {
  const at = email.lastIndexOf('@');
  if (at <= 0 || at === email.length - 1) return undefined;
  try {
    return normalizeDomain(email.slice(at + 1));
  } catch {
    return undefined;
  }
}

/**
 * Home-realm discovery over the realm cache. An address routes when its
 * domain (exactly; subdomains are domains of their own) is verified by an
 * organization with an enabled connection; an organization with several
 * enabled connections routes to its oldest.
 *
 * @example
 * const routing = createRealmRouting(realms);
 * const realm = await routing.homeRealm('ada@acme.example');
 */
export function createRealmRouting(realms: RealmCache): RealmRouting {
  return {
    async identifierFirst() {
      return (await realms.snapshot()).identifierFirst;
    },
    async platformConnections() {
      return (await realms.snapshot()).platformConnections;
    },
    async homeRealm(email: string): Promise<HomeRealm | undefined> {
      const domain = domainOfAddress(email.trim());
      if (!domain) return undefined;
      const snapshot = await realms.snapshot();
      const organizationId = snapshot.byDomain.get(domain);
      return organizationId === undefined ? undefined : snapshot.byOrganization.get(organizationId);
    },
    async organizationRealm(organizationId: string) {
      return (await realms.snapshot()).byOrganization.get(organizationId.trim().toLowerCase());
    },
  };
}
