import { SetupAdminInput } from '@idt/identity';
import { ProblemError } from '@idt/problem';
import type { Command } from 'commander';
import type { z } from 'zod';
import { type CommonOptions, commandTarget, type GlobalOptions, requireModules, withServices } from '../context.js';
import { CliError, usageError } from '../errors.js';
import type { CliIo } from '../io.js';
import { createOutput } from '../output.js';
import { type AnswerCheck, createTerminalPrompter } from '../prompter.js';
import { examples, withCommonOptions } from './shared.js';

interface SetupOptions extends CommonOptions {
  readonly email?: string;
  readonly passwordStdin?: boolean;
  readonly firstName?: string;
  readonly lastName?: string;
  readonly organization?: string;
}

/** How often a person may mistype the repeated password before setup gives up. */
const PASSWORD_ATTEMPTS = 3;

/** An inline check of one field, with the message the service would give. */
function check(schema: z.ZodType): AnswerCheck {
  return (value) => {
    const parsed = schema.safeParse(value);
    return parsed.success ? true : (parsed.error.issues[0]?.message ?? 'Invalid value.');
  };
}

/** The password piped on standard input: its one trailing line break is not part of it. */
function passwordFromStdin(text: string): string {
  return text.replace(/\r?\n$/, '');
}

/**
 * `idt setup`: the first-administrator bootstrap of setup mode (SPEC 3.1),
 * the same one `POST /v1/identity/setup/admin` runs.
 */
export function registerSetup(program: Command, io: CliIo): void {
  withCommonOptions(
    program
      .command('setup')
      .summary('create the first administrator and the platform organization')
      .description(
        'Ends setup mode: creates the first administrator, the platform organization and the owner membership, as POST /v1/identity/setup/admin does. On a terminal it asks for what the options do not give (the password hidden, typed twice); in scripts give every option and pipe the password with --password-stdin. Refuses (exit 1) once setup is complete.',
      )
      .option('--email <email>', 'the administrator’s e-mail address')
      .option('--password-stdin', 'read the password from standard input (one line)')
      .option('--first-name <name>', 'the administrator’s first name')
      .option('--last-name <name>', 'the administrator’s last name')
      .option('--organization <name>', 'the name of the platform organization'),
  )
    .addHelpText(
      'after',
      examples(
        'idt setup',
        'printf \'%s\\n\' "$ADMIN_PASSWORD" | idt setup --email ada@example.com --password-stdin --first-name Ada --last-name Lovelace --organization Acme',
      ),
    )
    .action(async (options: SetupOptions) => {
      const out = createOutput(io, options.json === true);
      const target = await commandTarget(io, program.opts<GlobalOptions>(), options);
      requireModules(target, 'setup', ['identity']);
      const given = {
        email: options.email,
        firstName: options.firstName,
        lastName: options.lastName,
        organizationName: options.organization,
      };
      const flags = { email: '--email', firstName: '--first-name', lastName: '--last-name', organizationName: '--organization' };
      const missing = (Object.keys(given) as Array<keyof typeof given>).filter((key) => given[key] === undefined);
      if (!io.interactive && (missing.length > 0 || !options.passwordStdin)) {
        const absent = [...missing.map((key) => flags[key]), ...(options.passwordStdin ? [] : ['--password-stdin'])];
        throw usageError(`Not on a terminal: give ${absent.join(', ')} (or run idt setup on a terminal to be asked).`);
      }
      const password = options.passwordStdin ? passwordFromStdin(await io.readStdin()) : undefined;
      if (options.passwordStdin && !password) throw usageError('--password-stdin read an empty password.');

      await withServices(io, out, target, { command: 'setup', modules: ['identity'] }, async ({ identity }) => {
        const { setup } = identity;
        // Refuse before asking anything.
        if (!(await setup.isSetupRequired())) throw new ProblemError('Setup.AlreadyCompleted');
        const fields = SetupAdminInput.shape;
        const prompter = io.prompter ?? createTerminalPrompter();
        const ask = async (key: keyof typeof given, message: string) =>
          given[key] ?? (await prompter.input(message, { validate: check(fields[key]) }));
        const email = await ask('email', 'E-mail address of the first administrator');
        let secret = password;
        const { policy } = identity.passwords;
        for (let attempt = 1; secret === undefined; attempt++) {
          const first = await prompter.password(`Password (${policy.minLength} to ${policy.maxLength} characters)`, {
            validate: check(fields.password),
          });
          const again = await prompter.password('Repeat the password');
          // The password policy (common, weak, personal, breached) speaks before the other questions; setup judges it again.
          const verdict = first === again ? await policy.check(first, { email }) : undefined;
          if (verdict?.ok) secret = first;
          else if (attempt >= PASSWORD_ATTEMPTS) {
            if (verdict) throw new CliError('Identity.PasswordRejected', `The password is refused. ${verdict.reasons.join(' ')}`);
            throw new CliError('Cli.PasswordMismatch', 'The passwords did not match.');
          } else if (verdict) out.warn(`the password is refused: ${verdict.reasons.join(' ')} Try another.`);
          else out.warn('the passwords did not match; try again.');
        }
        const firstName = await ask('firstName', 'First name');
        const lastName = await ask('lastName', 'Last name');
        const organizationName = await ask('organizationName', 'Name of the platform organization');

        out.progress('Creating the first administrator (hashing the password)…');
        const input = { email, password: secret, firstName, lastName, organizationName };
        const result = await setup.completeSetup(input);
        const shown = { email: email.trim().toLowerCase(), organizationName: organizationName.trim() };
        out.line(`Setup complete: ${shown.email} owns the platform organization ${shown.organizationName}.`);
        out.line(`  User id:         ${result.userId}`);
        out.line(`  Organization id: ${result.organizationId}`);
        out.result({ ...result, ...shown });
      });
    });
}
