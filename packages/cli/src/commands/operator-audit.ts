import { userInfo } from 'node:os';
import { type AuditActor, type AuditMetadata, defineAuditActions, type Idt } from '@idt/core';
import type { Knex } from 'knex';
import type { SeedReport } from '../seed/apply.js';

/**
 * The audit actions the `idt` command records itself, on the platform trail
 * with the `operator` actor. What a command changes through a module's
 * service is recorded by that module (`oidc.client.*` with the
 * {@link OPERATOR_AUDIT} context, `identity.password.reset` for
 * `idt users reset-password`, `identity.member.joined` for a seeded membership).
 */
export const CliAuditActions = defineAuditActions('cli', {
  seedApplied: {
    action: 'cli.seed.applied',
    description:
      'An operator applied a seed file (`idt seed`) or the demo (`idt demo`) and it changed something; `metadata.counts` has the outcomes per kind of entry.',
    targetType: 'seedFile',
  },
});

/** The operator at the command line: unnamed in idt, shown by the name of the system account that ran `idt`. */
export function operatorActor(): AuditActor {
  let display: string | null = null;
  try {
    display = userInfo().username || null;
  } catch {
    // No passwd entry for the uid (some containers): the record stays unnamed.
  }
  return { type: 'operator', id: null, display };
}

/** The audit context the CLI gives the services it calls, so their records name the operator, not `system`. */
export const OPERATOR_AUDIT: { readonly actor: AuditActor } = Object.freeze({ actor: operatorActor() });

/**
 * Records `cli.seed.applied` in the seed's transaction (`idt` composed on
 * it by `withServicesInTransaction`): if the seed rolls back, so does the
 * record. A seed that changed nothing records nothing.
 */
export async function recordSeedApplied(idt: Idt, report: SeedReport, source: { command: string; file: string }): Promise<void> {
  if (!report.changed) return;
  const trx = idt.db as Knex.Transaction;
  const counts: Record<string, AuditMetadata> = {};
  for (const [kind, outcome] of Object.entries(report.counts)) if (outcome) counts[kind] = { ...outcome };
  idt.infrastructure.audit.register(Object.values(CliAuditActions));
  await idt.infrastructure.audit.record(
    {
      action: CliAuditActions.seedApplied.action,
      organizationId: null,
      actor: OPERATOR_AUDIT.actor,
      target: { type: 'seedFile', id: null, display: source.file },
      metadata: { command: source.command, counts },
    },
    trx,
  );
}
