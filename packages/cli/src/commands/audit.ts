import { type AuditChainVerification, isUuid } from '@idt/core';
import { createKnexAuditStore, verifyAuditChain } from '@idt/core/knex';
import type { Command } from 'commander';
import { assertTargetMigrated, type CommonOptions, commandTarget, type GlobalOptions, withDatabase } from '../context.js';
import { CliError, usageError } from '../errors.js';
import type { CliIo } from '../io.js';
import { createOutput } from '../output.js';
import { examples, withCommonOptions } from './shared.js';

interface VerifyOptions extends CommonOptions {
  readonly org?: string;
}

/** How a chain is named on the command line and in output: its organization id, or `platform`. */
const chainName = (organizationId: string | null) => organizationId ?? 'platform';

/** One chain's result as a line. */
function describe(result: AuditChainVerification): string {
  const name = chainName(result.organizationId);
  if (!result.broken) {
    const range = result.checked === 0 ? 'no records' : `records ${result.anchorSequence + 1}–${result.headSequence}`;
    return `${name}: intact (${result.checked} checked, ${range})`;
  }
  return `${name}: BROKEN at ${result.broken.sequence} (${result.broken.reason}): ${result.broken.message}`;
}

/**
 * `idt audit verify [--org <id|platform>]`: walks the audit trail's hash
 * chains (every chain, or one) and names the first broken link of each.
 */
export function registerAudit(program: Command, io: CliIo): void {
  const audit = program
    .command('audit')
    .summary('check the audit trail')
    .description(
      'The audit trail: every module records what it changed, each organization in its own hash chain (docs/audit.md).',
    );

  withCommonOptions(
    audit
      .command('verify')
      .summary('walk the hash chains and name the first broken link')
      .description(
        'Walks the audit trail’s hash chain of one organization (--org <id>, or --org platform for the platform trail), or of every organization, from its pruning checkpoint to its head, and names the first broken link: a record edited (edited), reordered (relinked) or deleted (missing) in the database by hand. Exit code 1 when a chain is broken (Audit.ChainBroken).',
      )
      .option('--org <organization>', 'only this organization’s chain: its id, or `platform` for the platform trail'),
  )
    .addHelpText('after', examples('idt audit verify', 'idt audit verify --org platform --json'))
    .action(async (options: VerifyOptions) => {
      const out = createOutput(io, options.json === true);
      const org = options.org?.trim().toLowerCase();
      if (org !== undefined && org !== 'platform' && !isUuid(org)) {
        throw usageError(`--org takes an organization id (a GUID) or platform, not "${options.org}".`);
      }
      // Verification reads only: no mail, no signing keys.
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options, {
        requires: { mail: false, keyEncryptionSecret: false },
      });
      const results = await withDatabase(
        target,
        async (db) => {
          if (target.config.environment !== 'Testing') await assertTargetMigrated(db, target);
          const chains = org === undefined ? await createKnexAuditStore(db).chains() : [org === 'platform' ? null : org];
          const found: AuditChainVerification[] = [];
          for (const organizationId of chains) {
            out.progress(`Verifying ${chainName(organizationId)}…`);
            const result = await verifyAuditChain(db, organizationId, {
              onProgress: (checked) => {
                if (checked > 0 && checked % 10_000 === 0) out.progress(`  ${checked} records checked…`);
              },
            });
            out.line(describe(result));
            found.push(result);
          }
          return found;
        },
        'refuse',
      );
      if (results.length === 0) out.line('No audit records yet.');
      const broken = results.filter((result) => !result.valid);
      if (broken.length > 0) {
        const first = broken[0] as AuditChainVerification;
        throw new CliError(
          'Audit.ChainBroken',
          `${broken.length} audit chain(s) broken; first: ${chainName(first.organizationId)} at record ${first.broken?.sequence} (${first.broken?.reason}).`,
          { hints: [first.broken?.message ?? '', 'See docs/audit.md#verifying-the-trail.'] },
        );
      }
      out.result({
        valid: true,
        chains: results,
      });
    });
}
