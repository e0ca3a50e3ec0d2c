import { type Clock, type Logger, randomToken, readCookie, systemClock } from '@idt/core';
import type { FederatedOutcome, SignInFederation } from '@idt/oidc';
import { UNSOLICITED_COOKIE } from './callbacks.js';
import { PENDING_LINK_TTL_MS, type PendingLink, type Provisioner } from './provisioning.js';
import type { OutcomeStore, StoredOutcome } from './store.js';

/** The taking half of {@link SignInFederation}. */
export type OutcomeTaking = Pick<SignInFederation, 'consume' | 'consumeUnsolicited' | 'link'>;

/** What {@link createOutcomeTaking} needs. */
export interface OutcomeTakingOptions {
  readonly outcomes: OutcomeStore;
  readonly provisioner: Provisioner;
  readonly logger: Logger;
  readonly clock?: Clock;
}

const EXPIRED: FederatedOutcome = { kind: 'failed', reason: 'expired', organizationName: null, connectionName: null };

/** Handles are 256-bit base64url values; anything else is not looked up. */
const isHandle = (value: string) => /^[A-Za-z0-9_-]{20,100}$/.test(value);

/**
 * How the sign-in pipeline takes what a callback left: an outcome by its
 * handle and interaction (each once), an IdP-initiated one by the cookie the
 * browser brought, and the link of a `link-required` identity once the
 * account's password passed. A `link-required` outcome is answered with a
 * new handle, the pending link's, bound to the same interaction.
 *
 * @example
 * const taking = createOutcomeTaking({ outcomes, provisioner, logger });
 * const outcome = await taking.consume(handle, interactionUid);
 */
export function createOutcomeTaking(options: OutcomeTakingOptions): OutcomeTaking {
  const { outcomes, provisioner, logger } = options;
  const clock = options.clock ?? systemClock;

  async function answer(stored: StoredOutcome): Promise<FederatedOutcome> {
    const data = stored.data as { outcome?: FederatedOutcome; pending?: PendingLink; connectionName?: string };
    if (data.outcome) return data.outcome;
    if (!data.pending) return EXPIRED;
    const handle = randomToken(32);
    await outcomes.save(handle, {
      kind: 'link',
      interactionUid: stored.interactionUid,
      data: { pending: data.pending },
      expiresAt: new Date(clock.now().getTime() + PENDING_LINK_TTL_MS),
    });
    return { kind: 'link-required', email: data.pending.email, connectionName: data.connectionName ?? '', handle };
  }

  return {
    async consume(handle, interactionUid) {
      const stored = isHandle(handle) ? await outcomes.take(handle, 'outcome', interactionUid) : undefined;
      if (!stored) {
        logger.warn('sso outcome refused', { reason: 'unknown-or-used-handle' });
        return EXPIRED;
      }
      return answer(stored);
    },

    async consumeUnsolicited(cookieHeader) {
      const handle = readCookie(cookieHeader, UNSOLICITED_COOKIE);
      if (!handle) return undefined;
      const stored = isHandle(handle) ? await outcomes.take(handle, 'outcome', null) : undefined;
      if (!stored) {
        logger.warn('sso outcome refused', { reason: 'unknown-or-used-handle', initiatedBy: 'idp' });
        return EXPIRED;
      }
      return answer(stored);
    },

    async link(handle, interactionUid, userId, request) {
      if (!isHandle(handle)) return EXPIRED;
      // A link of an IdP-initiated sign-in is bound to no interaction: the password check binds it.
      const stored = (await outcomes.take(handle, 'link', interactionUid)) ?? (await outcomes.take(handle, 'link', null));
      const pending = (stored?.data as { pending?: PendingLink } | undefined)?.pending;
      if (!pending) {
        logger.warn('sso link refused', { reason: 'unknown-or-used-handle' });
        return EXPIRED;
      }
      const outcome = await provisioner.link(pending, userId, request);
      if (outcome.kind === 'failed') {
        logger.warn('sso link refused', { reason: outcome.reason, connectionId: pending.upstream.connectionId });
      }
      return outcome;
    },
  };
}
