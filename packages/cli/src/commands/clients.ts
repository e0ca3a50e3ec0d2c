import type { IdentityServices } from '@idt/identity';
import { CLIENT_KINDS } from '@idt/oidc';
import { ProblemError } from '@idt/problem';
import { type Command, Option } from 'commander';
import { type CommonOptions, commandTarget, type GlobalOptions, OPERATOR, requireModules, withServices } from '../context.js';
import { assertEnvFileFree, type EnvFileSource, writeClientEnvFile } from '../env-file.js';
import type { CliIo } from '../io.js';
import { createOutput, type Output } from '../output.js';
import { OPERATOR_AUDIT } from './operator-audit.js';
import {
  collect,
  type EnvFileOptions,
  envFileOption,
  examples,
  onClient,
  splitList,
  withCommonOptions,
  withEnvFileOptions,
} from './shared.js';

interface RegisterClientOptions extends CommonOptions, EnvFileOptions {
  readonly org: string;
  readonly kind: string;
  readonly name: string;
  readonly scope?: string[];
  readonly redirectUri?: string[];
  readonly postLogoutRedirectUri?: string[];
  readonly backchannelLogoutUri?: string;
  readonly refreshTokenLifetime?: string;
}

interface RotateSecretOptions extends CommonOptions, EnvFileOptions {
  readonly org?: string;
  readonly revokeActiveTokens?: boolean;
}

/**
 * An organization by id, slug or name.
 *
 * @throws ProblemError `Clients.NotFound`, as the organization surface answers for one it cannot reach.
 */
async function organizationOf(identity: IdentityServices, reference: string) {
  const organization = await identity.accounts.operator.findOrganization(reference);
  if (!organization) throw new ProblemError('Clients.NotFound', `No organization "${reference}".`);
  return organization;
}

/** Writes the env file when asked, then prints the secret once, or where it was written. */
async function deliverSecret(
  out: Output,
  source: EnvFileSource,
  envFile: string | undefined,
  options: { command: string; force: boolean },
): Promise<void> {
  const written = envFile === undefined ? undefined : await writeClientEnvFile(envFile, source, options);
  const { client } = source;
  out.line(`  Client id:      ${client.clientId}`);
  out.line(
    envFile === undefined
      ? `  Client secret:  ${source.clientSecret}   (shown only now; it cannot be fetched again)`
      : `  Client secret:  written to ${envFile}`,
  );
  out.line(`  Scopes:         ${client.scopes.join(' ')}`);
  out.line(`  Issuer:         ${source.issuer}`);
  if (written !== undefined) out.line(`  Env file:       ${envFile} (mode 0600): ${written.join(', ')}`);
  out.result({ ...source, ...(envFile !== undefined ? { envFile } : {}) });
}

/** The modules the client commands need. */
const CLIENT_MODULES = ['identity', 'oidc'] as const;

/** `idt register-client` and `idt rotate-secret`: the organization clients surface (SPEC 4.1) from the command line. */
export function registerClientCommands(program: Command, io: CliIo): void {
  withEnvFileOptions(
    withCommonOptions(
      program
        .command('register-client')
        .summary('register an application or a service account for an organization')
        .description(
          'Registers an OAuth client for an organization with the rules and answers of POST /v1/identity/organizations/{orgId}/clients, acting as the platform operator (platform-only scopes allowed). The secret is shown once, or written with the other variables to --env-file.',
        )
        .requiredOption('--org <organization>', 'the organization: its id or slug (or name)')
        .addOption(
          new Option('--kind <kind>', 'application (sign-in, authorization code) or service-account (client credentials)')
            .choices(CLIENT_KINDS)
            .makeOptionMandatory(),
        )
        .requiredOption('--name <name>', 'the client’s name; its id is derived from it')
        .option('--scope <scopes>', 'scopes to grant: repeat the option or separate them with spaces', collect)
        .option('--redirect-uri <uri>', 'applications: a redirect URI (repeatable; at least one)', collect)
        .option('--post-logout-redirect-uri <uri>', 'applications: a post-logout redirect URI (repeatable)', collect)
        .option('--backchannel-logout-uri <uri>', 'applications: the back-channel logout URI')
        .option('--refresh-token-lifetime <seconds>', 'applications: refresh-token lifetime, 60 to 31536000 seconds'),
    ),
    'the client’s OIDC_* / BFF_* variables to this file',
  )
    .addHelpText(
      'after',
      examples(
        'npx idt register-client --org acme --kind service-account --name Reporting --scope users.read --env-out sa.env',
        'npx idt register-client --org acme --kind application --name Dashboard --scope "openid profile email offline_access" --redirect-uri http://localhost:3000/bff/callback --post-logout-redirect-uri http://localhost:3000/ --env-out dashboard.env',
        'npx idt register-client --org acme --kind service-account --name Billing --scope users.read --env-out billing.env --json',
        'idt register-client … --env-file sa.env   (--env-file only where idt is started directly, or as npx -- idt …)',
      ),
    )
    .action(async (options: RegisterClientOptions) => {
      const out = createOutput(io, options.json === true);
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options);
      requireModules(target, 'register-client', CLIENT_MODULES);
      const envFile = envFileOption(io, options);
      if (envFile !== undefined) await assertEnvFileFree(envFile, options.force === true);
      const needs = { command: 'register-client', modules: CLIENT_MODULES };
      await withServices(io, out, target, needs, async ({ identity, oidc }) => {
        const organization = await organizationOf(identity, options.org);
        const registration = await oidc.clients.register(
          OPERATOR,
          organization.id,
          {
            kind: options.kind,
            name: options.name,
            scopes: splitList(options.scope),
            ...(options.redirectUri ? { redirectUris: options.redirectUri } : {}),
            ...(options.postLogoutRedirectUri ? { postLogoutRedirectUris: options.postLogoutRedirectUri } : {}),
            ...(options.backchannelLogoutUri !== undefined ? { backchannelLogoutUri: options.backchannelLogoutUri } : {}),
            ...(options.refreshTokenLifetime !== undefined ? { refreshTokenLifetime: Number(options.refreshTokenLifetime) } : {}),
          },
          {},
          OPERATOR_AUDIT,
        );
        const kind = registration.client.kind === 'service-account' ? 'service account' : 'application';
        out.line(`Registered ${kind} ${registration.client.clientId} for ${organization.name} (${organization.slug}).`);
        await deliverSecret(out, registration, envFile, { command: 'idt register-client', force: options.force === true });
      });
    });

  withEnvFileOptions(
    withCommonOptions(
      program
        .command('rotate-secret')
        .summary('issue a new client secret; the old one stops working at once')
        .description(
          'Issues a new secret for a client, as POST …/clients/{clientId}/rotate-secret does: the old secret stops working the moment the new one is issued. With --revoke-active-tokens every token the client holds ends too. The new secret is shown once, or written to --env-file.',
        )
        .argument('<clientId>', 'the client whose secret to rotate')
        .option('--revoke-active-tokens', 'also end every access token the client holds')
        .option('--org <organization>', 'answer "not found" unless the client belongs to this organization (id, slug or name)'),
    ),
    'the client’s OIDC_* / BFF_* variables with the new secret to this file',
  )
    .addHelpText(
      'after',
      examples(
        'npx idt rotate-secret sa-acme-reporting',
        'npx idt rotate-secret sa-acme-reporting --revoke-active-tokens --env-out sa.env --force',
      ),
    )
    .action(async (clientId: string, options: RotateSecretOptions) => {
      const out = createOutput(io, options.json === true);
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options);
      requireModules(target, 'rotate-secret', CLIENT_MODULES);
      const envFile = envFileOption(io, options);
      if (envFile !== undefined) await assertEnvFileFree(envFile, options.force === true);
      const needs = { command: 'rotate-secret', modules: CLIENT_MODULES };
      await withServices(io, out, target, needs, async ({ identity, oidc }) => {
        const organization = options.org === undefined ? undefined : await organizationOf(identity, options.org);
        const rotated = await onClient(clientId, organization, () =>
          oidc.clients.rotateSecret(
            OPERATOR,
            organization?.id,
            clientId,
            { revokeActiveTokens: options.revokeActiveTokens === true },
            OPERATOR_AUDIT,
          ),
        );
        out.line(
          `Rotated the secret of ${rotated.client.clientId}; the old secret no longer works${
            options.revokeActiveTokens ? ' and its active tokens are revoked' : ''
          }.`,
        );
        await deliverSecret(out, rotated, envFile, { command: 'idt rotate-secret', force: options.force === true });
      });
    });
}
