import { toIso } from '@idt/core/knex';
import { type IdentityServices, PasswordSchema } from '@idt/identity';
import type { ClientRecord } from '@idt/oidc';
import { ProblemError } from '@idt/problem';
import type { Command } from 'commander';
import { type CommonOptions, commandTarget, type GlobalOptions, withServices } from '../context.js';
import { CliError, usageError } from '../errors.js';
import type { CliIo } from '../io.js';
import { createOutput, type Output } from '../output.js';
import { createTerminalPrompter } from '../prompter.js';
import { OPERATOR_AUDIT } from './operator-audit.js';
import { examples, onClient, readCommandVariables, withCommonOptions } from './shared.js';

/** A client as the list and show commands print it: no secret, no hash (the record has none). */
function clientView(client: ClientRecord): Record<string, unknown> {
  return { ...client };
}

/** Prints rows as aligned columns under a header. */
function table(out: Output, header: readonly string[], rows: ReadonlyArray<readonly string[]>): void {
  const widths = header.map((title, index) => Math.max(title.length, ...rows.map((row) => (row[index] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, index) => (index === cells.length - 1 ? cell : cell.padEnd(widths[index] ?? 0)))
      .join('  ')
      .trimEnd();
  out.line(line(header));
  for (const row of rows) out.line(line(row));
}

/**
 * An organization by id, slug or name.
 *
 * @throws ProblemError `Identity.OrganizationNotFound`.
 */
async function organizationOf(identity: IdentityServices, reference: string) {
  const organization = await identity.accounts.operator.findOrganization(reference);
  if (!organization)
    throw new ProblemError('Identity.OrganizationNotFound', `No organization "${reference}" (id, slug or name).`);
  return organization;
}

interface ListOptions extends CommonOptions {
  readonly org?: string;
}

interface DeleteOptions extends CommonOptions {
  readonly yes?: boolean;
}

interface ResetPasswordOptions extends CommonOptions {
  readonly passwordStdin?: boolean;
}

/** `idt clients list|show|delete`: the OAuth clients of every organization, for the operator. */
export function registerClientAdmin(program: Command, io: CliIo): void {
  const clients = program
    .command('clients')
    .summary('list, show and delete OAuth clients')
    .description(
      'The OAuth clients of the deployment, across organizations, as the platform operator sees them. Secrets are never shown: they are stored hashed (rotate one with idt rotate-secret).',
    );

  withCommonOptions(
    clients
      .command('list')
      .summary('list clients: id, kind, status, organization id, name')
      .description(
        'Lists the clients of every organization (and the first-party ones bound to none), oldest first, with their organization id.',
      )
      .option('--org <organization>', 'only the clients of this organization (id, slug or name)'),
  )
    .addHelpText('after', examples('idt clients list', 'idt clients list --org acme --json'))
    .action(async (options: ListOptions) => {
      const out = createOutput(io, options.json === true);
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options);
      await withServices(
        io,
        out,
        target,
        { command: 'clients list', modules: ['identity', 'oidc'] },
        async ({ identity, oidc }) => {
          const organizationId = options.org === undefined ? undefined : (await organizationOf(identity, options.org)).id;
          const list = await oidc.clients.list(organizationId);
          if (list.length === 0) out.line(options.org === undefined ? 'No clients.' : `No clients in ${options.org}.`);
          else {
            table(
              out,
              ['CLIENT ID', 'KIND', 'STATUS', 'ORGANIZATION ID', 'NAME'],
              list.map((client) => [client.clientId, client.kind, client.status, client.organizationId ?? '-', client.name]),
            );
          }
          out.result({ clients: list.map(clientView) });
        },
      );
    });

  withCommonOptions(
    clients
      .command('show')
      .summary('show one client: kind, organization, URIs, scopes, dates')
      .argument('<clientId>', 'the client id'),
  )
    .addHelpText('after', examples('idt clients show sa-acme-reporting', 'idt clients show portal --json'))
    .action(async (clientId: string, options: CommonOptions) => {
      const out = createOutput(io, options.json === true);
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options);
      await withServices(io, out, target, { command: 'clients show', modules: ['identity', 'oidc'] }, async ({ oidc }) => {
        const client = await onClient(clientId, undefined, () => oidc.clients.get(undefined, clientId));
        const rows: Array<[string, string]> = [
          ['Client id', client.clientId],
          ['Name', client.name],
          ['Kind', client.kind],
          ['Status', client.status],
          ['Organization id', client.organizationId ?? '- (first-party, no organization)'],
          ['First party', client.firstParty ? 'yes' : 'no'],
          ['Scopes', client.scopes.join(' ')],
          ['Redirect URIs', client.redirectUris.join(' ') || '-'],
          ['Post-logout URIs', client.postLogoutRedirectUris.join(' ') || '-'],
          ['Front-channel logout', client.frontchannelLogoutUri ?? '-'],
          ['Back-channel logout', client.backchannelLogoutUri ?? '-'],
          ['Created', client.createdAt],
          ['Last used', client.lastUsedAt ?? 'never'],
          ['Secret rotated', client.lastRotatedAt ?? 'never'],
        ];
        for (const [name, value] of rows) out.line(`${`${name}:`.padEnd(22)}${value}`);
        out.result({ client: clientView(client) });
      });
    });

  withCommonOptions(
    clients
      .command('delete')
      .summary('delete a client; its tokens stop working')
      .description(
        'Deletes a client, as DELETE …/clients/{clientId} does. Asks for confirmation on a terminal; in scripts pass --yes.',
      )
      .argument('<clientId>', 'the client id')
      .option('--yes', 'delete without asking'),
  )
    .addHelpText('after', examples('idt clients delete sa-acme-reporting', 'idt clients delete sa-acme-reporting --yes --json'))
    .action(async (clientId: string, options: DeleteOptions) => {
      const out = createOutput(io, options.json === true);
      if (!options.yes && !io.interactive) {
        throw usageError(`Not on a terminal: pass --yes to delete ${clientId} without being asked.`);
      }
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options);
      await withServices(io, out, target, { command: 'clients delete', modules: ['identity', 'oidc'] }, async ({ oidc }) => {
        const client = await onClient(clientId, undefined, () => oidc.clients.get(undefined, clientId));
        if (!options.yes) {
          const prompter = io.prompter ?? createTerminalPrompter();
          const kind = client.kind === 'service-account' ? 'service account' : 'application';
          const question = `Delete the ${kind} ${client.clientId} (${client.name})? Its tokens stop working.`;
          const confirmed = prompter.confirm
            ? await prompter.confirm(question)
            : /^y(es)?$/i.test((await prompter.input(`${question} (yes/no)`)).trim());
          if (!confirmed) {
            out.line('Nothing deleted.');
            out.result({ deleted: false, clientId: client.clientId });
            return;
          }
        }
        await oidc.clients.delete(undefined, client.clientId, OPERATOR_AUDIT);
        out.line(`Deleted ${client.clientId}.`);
        out.result({ deleted: true, clientId: client.clientId });
      });
    });
}

/** `idt orgs list`: every organization with its id. */
export function registerOrganizationAdmin(program: Command, io: CliIo): void {
  const orgs = program.command('orgs').summary('list organizations');
  withCommonOptions(
    orgs
      .command('list')
      .summary('list organizations: id, slug, status, policy, members, name')
      .description(
        'Lists every organization, oldest first, with its id, slug, status, enrollment policy and number of memberships.',
      ),
  )
    .addHelpText('after', examples('idt orgs list', 'idt orgs list --json'))
    .action(async (options: CommonOptions) => {
      const out = createOutput(io, options.json === true);
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options);
      await withServices(io, out, target, { command: 'orgs list', modules: ['identity'] }, async (_services, idt) => {
        // Read-only: the identity services answer per organization; the operator's list spans all of them.
        const rows = (await idt
          .db('identity_organizations as o')
          .leftJoin('identity_memberships as m', 'm.organization_id', 'o.id')
          .groupBy('o.id', 'o.name', 'o.slug', 'o.status', 'o.enrollment_policy', 'o.is_platform', 'o.created_at')
          .orderBy('o.created_at', 'asc')
          .orderBy('o.id', 'asc')
          .select('o.id', 'o.name', 'o.slug', 'o.status', 'o.enrollment_policy', 'o.is_platform', 'o.created_at')
          .count({ members: 'm.id' })) as Array<Record<string, unknown>>;
        const organizations = rows.map((row) => ({
          id: String(row.id),
          name: String(row.name),
          slug: String(row.slug),
          status: String(row.status),
          enrollmentPolicy: String(row.enrollment_policy),
          isPlatform: Boolean(row.is_platform),
          members: Number(row.members),
          createdAt: toIso(row.created_at),
        }));
        if (organizations.length === 0) out.line('No organizations; run `idt setup` to create the platform organization.');
        else {
          table(
            out,
            ['ID', 'SLUG', 'STATUS', 'ENROLLMENT', 'MEMBERS', 'NAME'],
            organizations.map((org) => [
              org.id,
              org.slug,
              org.status,
              org.enrollmentPolicy,
              String(org.members),
              org.isPlatform ? `${org.name} (platform)` : org.name,
            ]),
          );
        }
        out.result({ organizations });
      });
    });
}

/** Reads a new password from standard input and checks it with the identity package's policy. */
async function passwordFromStdin(io: CliIo): Promise<string> {
  const password = (await io.readStdin()).replace(/\r?\n$/, '');
  const parsed = PasswordSchema.safeParse(password);
  if (!parsed.success) {
    throw new CliError('Validation.Failed', 'The password read from standard input is refused.', {
      hints: parsed.error.issues.map((issue) => `password: ${issue.message}`),
    });
  }
  return password;
}

/** `idt users list` and `idt users reset-password`. */
export function registerUserAdmin(program: Command, io: CliIo): void {
  const users = program.command('users').summary('list users, reset a password');

  withCommonOptions(
    users
      .command('list')
      .summary('list users: id, e-mail, status, organization ids')
      .description(
        'Lists every user with the ids of the organizations they hold a membership in; with --org, the members of one organization with their membership status and roles.',
      )
      .option('--org <organization>', 'only the members of this organization (id, slug or name)'),
  )
    .addHelpText('after', examples('idt users list', 'idt users list --org acme --json'))
    .action(async (options: ListOptions) => {
      const out = createOutput(io, options.json === true);
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options);
      await withServices(io, out, target, { command: 'users list', modules: ['identity'] }, async ({ identity }, idt) => {
        if (options.org !== undefined) {
          const organization = await organizationOf(identity, options.org);
          // The members surface, as an administrator of that organization reads it.
          const actor = { userId: null, organizationId: organization.id, permissions: new Set(['UsersRead']) };
          const members = [];
          for (let page = 1; ; page++) {
            const slice = await identity.accounts.memberships.list(actor, organization.id, { page, pageSize: 100 });
            members.push(...slice.items);
            if (!slice.hasNextPage) break;
          }
          if (members.length === 0) out.line(`No members in ${organization.name}.`);
          else {
            table(
              out,
              ['USER ID', 'E-MAIL', 'MEMBERSHIP', 'ROLES', 'NAME'],
              members.map((member) => [
                member.userId,
                member.email,
                member.status,
                member.roles.join(',') || '-',
                `${member.firstName} ${member.lastName}`,
              ]),
            );
          }
          out.result({ organizationId: organization.id, members });
          return;
        }
        // Read-only, and only these columns: never the password hash.
        const rows = (await idt
          .db('identity_users')
          .orderBy('created_at', 'asc')
          .orderBy('id', 'asc')
          .select('id', 'email', 'first_name', 'last_name', 'status', 'email_verified', 'created_at')) as Array<
          Record<string, unknown>
        >;
        const memberships = (await idt.db('identity_memberships').select('user_id', 'organization_id')) as Array<{
          user_id: string;
          organization_id: string;
        }>;
        const list = rows.map((row) => ({
          id: String(row.id),
          email: String(row.email),
          firstName: String(row.first_name),
          lastName: String(row.last_name),
          status: String(row.status),
          emailVerified: Boolean(row.email_verified),
          createdAt: toIso(row.created_at),
          organizationIds: memberships.filter((m) => m.user_id === row.id).map((m) => m.organization_id),
        }));
        if (list.length === 0) out.line('No users; run `idt setup` to create the first administrator.');
        else {
          table(
            out,
            ['USER ID', 'E-MAIL', 'STATUS', 'ORGANIZATION IDS', 'NAME'],
            list.map((user) => [
              user.id,
              user.email,
              user.status,
              user.organizationIds.join(',') || '-',
              `${user.firstName} ${user.lastName}`,
            ]),
          );
        }
        out.result({ users: list });
      });
    });

  withCommonOptions(
    users
      .command('reset-password')
      .summary("set a user's password from standard input")
      .description(
        "Sets a user's password: read from standard input with --password-stdin (one line), or asked on a terminal (hidden, twice). The identity package's password policy applies (12 to 256 characters or the configured minimum; common, weak, breached passwords and ones containing the user's e-mail address or name are refused), and the password is hashed with its argon2id hasher. Signing in with the old password stops working at once, and the user is signed out everywhere: every session, refresh token and access token of the user ends, as after a reset with a link (the notifications module mails the user a security notice). Users can reset their own password with the \"Forgot your password?\" link of the sign-in page.",
      )
      .argument('<email>', "the user's e-mail address")
      .option('--password-stdin', 'read the new password from standard input (one line)'),
  )
    .addHelpText(
      'after',
      examples(
        `printf '%s\\n' "$NEW_PASSWORD" | idt users reset-password ada@example.com --password-stdin`,
        'idt users reset-password ada@example.com',
      ),
    )
    .action(async (email: string, options: ResetPasswordOptions) => {
      const out = createOutput(io, options.json === true);
      if (!options.passwordStdin && !io.interactive) {
        throw usageError('Not on a terminal: pipe the new password and pass --password-stdin.');
      }
      const given = options.passwordStdin ? await passwordFromStdin(io) : undefined;
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options);
      await withServices(io, out, target, { command: 'users reset-password', modules: ['identity'] }, async ({ identity }) => {
        const user = await identity.accounts.operator.findUserByEmail(email);
        if (!user) throw new ProblemError('Identity.UserNotFound', `No user has the e-mail address ${email.trim()}.`);
        let password = given;
        if (password === undefined) {
          const prompter = io.prompter ?? createTerminalPrompter();
          const check = (value: string) => {
            const parsed = PasswordSchema.safeParse(value);
            return parsed.success ? true : (parsed.error.issues[0]?.message ?? 'Invalid password.');
          };
          const { policy } = identity.passwords;
          const first = await prompter.password(`New password (${policy.minLength} to ${policy.maxLength} characters)`, {
            validate: check,
          });
          if ((await prompter.password('Repeat the new password')) !== first) {
            throw new CliError('Cli.PasswordMismatch', 'The passwords did not match; nothing changed.');
          }
          password = first;
        }
        out.progress('Hashing the new password…');
        // The identity service judges it with the policy for this user, hashes it and, in one transaction,
        // ends every session and token of the user and publishes UserPasswordResetEvent (the notice mail).
        await identity.passwords.reset.setByOperator(user.id, password);
        out.line(
          `Set a new password for ${user.email}; the old one no longer works and every session of the user was signed out.`,
        );
        out.result({ userId: user.id, email: user.email });
      });
    });
}

interface TokenOptions {
  readonly envFile?: string;
  readonly from?: string;
  readonly scope?: string;
  readonly json?: boolean;
}

/** The variables `idt token` needs, as env files of service accounts name them. */
const TOKEN_VARIABLES = ['OIDC_ISSUER', 'OIDC_SERVICE_CLIENT_ID', 'OIDC_SERVICE_CLIENT_SECRET'] as const;

/**
 * `idt token`: a client-credentials access token from the issuer's token
 * endpoint (found through discovery), for scripts.
 */
export function registerToken(program: Command, io: CliIo): void {
  program
    .command('token')
    .summary('print a client-credentials access token of a service account')
    .description(
      "Requests an access token with the client-credentials grant over HTTP: reads OIDC_ISSUER, OIDC_SERVICE_CLIENT_ID, OIDC_SERVICE_CLIENT_SECRET and OIDC_SERVICE_SCOPES from the service account's env file (--from, or --env-file), else from the environment, finds the token endpoint through the issuer's discovery document, and prints the token alone (or JSON with --json). Needs the server running; not the database.",
    )
    .option('--from <path>', 'the env file of the service account (written by register-client --env-out)')
    .option('--env-file <path>', 'the same as --from; under npx write --from (npx takes --env-file itself)')
    .option('--scope <scopes>', 'the scopes to ask for (default: OIDC_SERVICE_SCOPES)')
    .option('--json', 'print one JSON document: the token, its type, lifetime and scope')
    .addHelpText(
      'after',
      examples(
        'npx idt token --from sa.env',
        'curl -H "authorization: Bearer $(npx idt token --from sa.env)" http://localhost:8080/v1/identity/organizations',
        'set -a; . ./sa.env; set +a; idt token --json',
      ),
    )
    .action(async (options: TokenOptions) => {
      const out = createOutput(io, options.json === true);
      if (options.from !== undefined && options.envFile !== undefined && options.from !== options.envFile) {
        throw usageError('--from and --env-file name different files; give one of them.');
      }
      const { variables, where } = await readCommandVariables(io, options.from ?? options.envFile, {
        required: TOKEN_VARIABLES,
        unreadableHint: 'Write one with: idt register-client --kind service-account … --env-out <path>',
        missingHint: (where) =>
          where === undefined
            ? 'Name the service account’s env file: idt token --from sa.env (register-client --env-out writes one).'
            : `${where} is not a service account’s env file; write one with idt register-client --kind service-account … --env-out <path>.`,
      });
      const issuer = String(variables.OIDC_ISSUER).replace(/\/+$/, '');
      const clientId = String(variables.OIDC_SERVICE_CLIENT_ID);
      const secret = String(variables.OIDC_SERVICE_CLIENT_SECRET);
      const scope = options.scope ?? variables.OIDC_SERVICE_SCOPES ?? '';
      const unreachable = (error: unknown, url: string) =>
        new CliError(
          'Token.IssuerUnreachable',
          `Cannot reach ${url}: ${(error as Error).cause ? String(((error as Error).cause as Error).message) : (error as Error).message}.`,
          {
            hints: [`Check OIDC_ISSUER (${issuer}) in ${where}, and that the server is running.`],
          },
        );
      const discoveryUrl = `${issuer}/.well-known/openid-configuration`;
      let discovery: { token_endpoint?: unknown };
      try {
        const response = await fetch(discoveryUrl, { headers: { accept: 'application/json' } });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        discovery = (await response.json()) as { token_endpoint?: unknown };
      } catch (error) {
        throw unreachable(error, discoveryUrl);
      }
      if (typeof discovery.token_endpoint !== 'string') {
        throw new CliError('Token.IssuerUnreachable', `${discoveryUrl} names no token_endpoint.`, {
          hints: [`Check OIDC_ISSUER (${issuer}) in ${where}: it must be the idt issuer.`],
        });
      }
      const tokenEndpoint = discovery.token_endpoint;
      // client_secret_basic, with the id and secret form-encoded first (RFC 6749, 2.3.1).
      const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64');
      let response: Response;
      try {
        response = await fetch(tokenEndpoint, {
          method: 'POST',
          headers: {
            authorization: `Basic ${basic}`,
            'content-type': 'application/x-www-form-urlencoded',
            accept: 'application/json',
          },
          body: new URLSearchParams({ grant_type: 'client_credentials', ...(scope ? { scope } : {}) }),
        });
      } catch (error) {
        throw unreachable(error, tokenEndpoint);
      }
      const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
      if (!response.ok || typeof body.access_token !== 'string') {
        const reason = [body.error, body.error_description].filter((part) => typeof part === 'string').join(': ');
        throw new CliError(
          'Token.Refused',
          `The token endpoint refused the request (HTTP ${response.status}${reason ? `, ${reason}` : ''}).`,
          {
            hints: [
              body.error === 'invalid_client'
                ? `Check OIDC_SERVICE_CLIENT_ID and OIDC_SERVICE_CLIENT_SECRET in ${where}; after idt rotate-secret only the new secret works.`
                : `Check OIDC_SERVICE_SCOPES (or --scope) in ${where}: only the scopes granted to ${clientId} can be asked for.`,
            ],
          },
        );
      }
      if (!out.json) io.out(`${body.access_token}\n`);
      out.result({
        accessToken: body.access_token,
        tokenType: body.token_type ?? 'Bearer',
        expiresIn: body.expires_in ?? null,
        scope: body.scope ?? null,
        clientId,
        issuer,
      });
    });
}
