import { type Clock, isUuid, newId, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { authorizeOrganization, type SsoActor, type SsoDirectory } from '../access.js';
import type { DomainRecord } from '../connections/records.js';
import type { AddDomainInput, DomainResponse } from '../connections/schemas.js';
import { DomainVerifiedEvent, type DomainVerifiedPayload } from '../events.js';
import '../problems.js';
import { SsoAuditActions, ssoChangeEntry } from '../audit-actions.js';
import { SIGN_IN_REALM_EVICTIONS } from '../sign-in/realm-cache.js';
import { normalizeDomain } from './domain-name.js';
import type { DomainsStore } from './store.js';
import type { DomainVerifier } from './verifier.js';

/** The most domains one organization may add. */
export const MAX_DOMAINS_PER_ORGANIZATION = 100;

/** Options of {@link createSsoDomainsService}. */
export interface SsoDomainsServiceOptions {
  readonly store: DomainsStore;
  readonly directory: SsoDirectory;
  /** Makes tokens and looks them up in DNS. */
  readonly verifier: DomainVerifier;
  readonly clock?: Clock;
}

/**
 * The domains an organization claims, proved by a DNS TXT record. A domain
 * is verified by at most one organization. Managed by the organization's
 * owners and admins and by platform administrators; another organization
 * answers 404.
 */
export interface SsoDomainsService {
  list(actor: SsoActor, organizationId: string): Promise<DomainResponse[]>;
  /**
   * Adds a domain (normalised) with a new `idt-verification=…` token to publish.
   *
   * @throws ProblemError `Sso.InvalidDomain`, `Sso.DomainExists` (409) when the organization already added it
   */
  add(actor: SsoActor, organizationId: string, input: AddDomainInput): Promise<DomainResponse>;
  get(actor: SsoActor, organizationId: string, id: string): Promise<DomainResponse>;
  /**
   * Looks the token up in the domain's TXT records and marks the domain
   * verified, publishing `DomainVerifiedEvent` in the same transaction. A
   * domain already verified answers as it is.
   *
   * @throws ProblemError `Sso.DomainVerificationFailed` (422), `Sso.DnsUnavailable` (503),
   *   `Sso.DomainTaken` (409) when another organization verified it
   */
  verify(actor: SsoActor, organizationId: string, id: string): Promise<DomainResponse>;
  remove(actor: SsoActor, organizationId: string, id: string): Promise<void>;
  /** The organization that verified the domain of `domainOrAddress` (an address or a domain name), if any: for home-realm discovery. */
  verifiedOrganizationOf(domainOrAddress: string): Promise<string | undefined>;
}

/** A domain as an audit target: its id and name (never its verification value). */
function domainTarget(record: DomainRecord) {
  return { type: 'ssoDomain', id: record.id, display: record.domain };
}

/** A domain as the API answers it. */
export function toDomainResponse(record: DomainRecord): DomainResponse {
  return {
    id: record.id,
    organizationId: record.organizationId,
    domain: record.domain,
    verified: record.verifiedAt !== null,
    verifiedAt: record.verifiedAt,
    verification: { type: 'TXT', name: record.domain, value: record.token },
    createdAt: record.createdAt,
  };
}

function notFound(): ProblemError {
  return new ProblemError('Sso.DomainNotFound');
}

function taken(domain: string): ProblemError {
  return new ProblemError('Sso.DomainTaken', `${domain} is verified by another organization.`);
}

/**
 * Creates the domains service.
 *
 * @example
 * const domains = createSsoDomainsService({ store, directory, verifier: createDomainVerifier({ resolver }) });
 * const added = await domains.add(principal, organizationId, { domain: 'example.com' });
 * // publish added.verification.value as a TXT record of example.com, then:
 * await domains.verify(principal, organizationId, added.id);
 */
export function createSsoDomainsService(options: SsoDomainsServiceOptions): SsoDomainsService {
  const { store, directory, verifier } = options;
  const clock = options.clock ?? systemClock;

  const key = (id: string) => {
    const lower = id.trim().toLowerCase();
    if (!isUuid(lower)) throw notFound();
    return lower;
  };

  async function existing(organizationId: string, id: string): Promise<DomainRecord> {
    const record = await store.find(organizationId, key(id));
    if (!record) throw notFound();
    return record;
  }

  return {
    async list(actor, organizationId) {
      await authorizeOrganization(directory, actor, organizationId);
      return (await store.list(organizationId)).map(toDomainResponse);
    },

    async add(actor, organizationId, input) {
      await authorizeOrganization(directory, actor, organizationId);
      const domain = normalizeDomain(input.domain);
      const record: DomainRecord = {
        id: newId(),
        organizationId,
        domain,
        token: verifier.createToken(),
        verifiedAt: null,
        createdAt: clock.now().toISOString(),
      };
      if ((await store.list(organizationId)).length >= MAX_DOMAINS_PER_ORGANIZATION) {
        throw new ProblemError('Sso.InvalidDomain', `An organization adds at most ${MAX_DOMAINS_PER_ORGANIZATION} domains.`);
      }
      await store.transaction(async (tx) => {
        if ((await tx.insert(record)) === 'exists') {
          throw new ProblemError('Sso.DomainExists', `Your organization has already added ${domain}.`);
        }
        await tx.audit?.([ssoChangeEntry(SsoAuditActions.domainAdded.action, actor, organizationId, domainTarget(record))]);
      });
      return toDomainResponse(record);
    },

    async get(actor, organizationId, id) {
      await authorizeOrganization(directory, actor, organizationId);
      return toDomainResponse(await existing(organizationId, id));
    },

    async verify(actor, organizationId, id) {
      await authorizeOrganization(directory, actor, organizationId);
      const record = await existing(organizationId, id);
      if (record.verifiedAt !== null) return toDomainResponse(record);
      const owner = await store.verifiedBy(record.domain);
      if (owner !== undefined && owner !== organizationId) throw taken(record.domain);
      const outcome = await verifier.verify(record.domain, record.token);
      if (outcome.status === 'dns-error') {
        throw new ProblemError(
          'Sso.DnsUnavailable',
          `The DNS lookup of ${record.domain} failed (${outcome.code}); try again later.`,
        );
      }
      if (outcome.status === 'not-found') {
        throw new ProblemError(
          'Sso.DomainVerificationFailed',
          `No TXT record of ${record.domain} holds ${record.token}. Publish it, wait for DNS to update, and try again.`,
        );
      }
      const verifiedAt = clock.now().toISOString();
      const verified = await store.transaction(async (tx) => {
        const result = await tx.markVerified(organizationId, record.id, verifiedAt);
        if (result === 'taken') throw taken(record.domain);
        // Verified meanwhile by a concurrent request, or deleted: read below, outside the transaction.
        if (result === 'missing') return undefined;
        const payload: DomainVerifiedPayload = {
          domainId: record.id,
          organizationId,
          domain: record.domain,
          verifiedBy: actor.userId,
          verifiedAt,
        };
        await tx.evict(SIGN_IN_REALM_EVICTIONS);
        await tx.publish([{ event: DomainVerifiedEvent, payload }]);
        await tx.audit?.([ssoChangeEntry(SsoAuditActions.domainVerified.action, actor, organizationId, domainTarget(record))]);
        return { ...record, verifiedAt };
      });
      if (verified) return toDomainResponse(verified);
      return toDomainResponse(await existing(organizationId, record.id));
    },

    async remove(actor, organizationId, id) {
      await authorizeOrganization(directory, actor, organizationId);
      const domainId = key(id);
      // Read first for the audit record's name (a missing domain is 404 either way).
      const current = await existing(organizationId, domainId);
      await store.transaction(async (tx) => {
        if (!(await tx.delete(organizationId, domainId))) throw notFound();
        // A verified domain that goes stops routing its addresses.
        await tx.evict(SIGN_IN_REALM_EVICTIONS);
        await tx.audit?.([
          ssoChangeEntry(SsoAuditActions.domainDeleted.action, actor, organizationId, domainTarget(current), {
            wasVerified: current.verifiedAt !== null,
          }),
        ]);
      });
    },

    async verifiedOrganizationOf(domainOrAddress) {
      const at = domainOrAddress.lastIndexOf('@');
      let domain: string;
      try {
        domain = normalizeDomain(at === -1 ? domainOrAddress : domainOrAddress.slice(at + 1));
      } catch {
        return undefined;
      }
      return store.verifiedBy(domain);
    },
  };
}
