import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import {
  EmailSchema,
  EnrollmentPolicySchema,
  OrganizationNameSchema,
  PasswordSchema,
  PersonNameSchema,
  RoleListSchema,
} from '@idt/identity';
import { RegisterClientInput, ScopeRowInput } from '@idt/oidc';
import { memberPath, ValidationProblem } from '@idt/problem';
import { parseDocument, parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { CliError } from '../errors.js';

const clientFields = RegisterClientInput.shape;

/** A reference to an organization: its name, slug or id. */
const OrganizationReference = z
  .string({ error: 'Name an organization (its name, slug or id).' })
  .trim()
  .min(1, 'Name an organization (its name, slug or id).')
  .max(200, 'An organization reference has at most 200 characters.');

/** A string that may be blank: the admin block is skipped unless email, password and organizationName are all set (SPEC 3.1). */
const MaybeBlank = z.string().default('');

/** The first administrator, bootstrapped exactly as `idt setup` and `POST /v1/identity/setup/admin` do. */
export const SeedAdmin = z
  .strictObject({
    email: MaybeBlank.describe('The administrator e-mail address. Blank skips the admin block.'),
    password: MaybeBlank.describe(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the seed file's placeholder syntax, documented.
      "12 to 256 characters; the identity package's password policy applies. Blank skips the admin block. Use ${VARIABLE} to read it from the environment.",
    ),
    firstName: MaybeBlank,
    lastName: MaybeBlank,
    organizationName: MaybeBlank.describe('The platform organization. Blank skips the admin block.'),
  })
  .describe('The first administrator and the platform organization; skipped once setup is complete.');

/** An organization, owned by the seeded administrator (else the platform organization's first owner). */
export const SeedOrganization = z
  .strictObject({
    name: OrganizationNameSchema.describe('Matched case-insensitively: an existing organization of this name is left unchanged.'),
    enrollmentPolicy: EnrollmentPolicySchema.optional().describe('`invitation_only` when absent.'),
  })
  .describe('An organization owned by the seeded administrator.');

/** A membership of a seeded user. */
export const SeedMembership = z.strictObject({
  organization: OrganizationReference.describe('The organization: a name from this file, or an existing name, slug or id.'),
  roles: RoleListSchema.describe('Built-in roles (owner, admin, manager, user) or the organization’s custom roles.'),
  status: z
    .enum(['active', 'pending'])
    .optional()
    .describe('`active` (default), or `pending` waiting for approval (no roles until approved).'),
});

/** A user account with its memberships. */
export const SeedUser = z.strictObject({
  email: EmailSchema.describe('Matched case-insensitively: an existing user is left unchanged.'),
  password: PasswordSchema.optional().describe(
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the seed file's placeholder syntax, documented.
    'Without a password the user signs in passwordless (magic link or code). Use ${VARIABLE} to read it from the environment.',
  ),
  firstName: PersonNameSchema,
  lastName: PersonNameSchema,
  memberships: z.array(SeedMembership).max(100).optional(),
});

/** A scope row (SPEC 2.2): added, or updated when its description or flags differ. */
export const SeedScope = ScopeRowInput.strict();

/**
 * A first-party client. A `clientId` starting with `sa-` makes a service
 * account (client_credentials) bound to `tenantName`; other clients are
 * first-party applications, bound to `tenantName` when given.
 */
export const SeedClient = z.strictObject({
  clientId: z
    .string()
    .trim()
    .min(1)
    .max(200, 'A client id has at most 200 characters.')
    .regex(/^[A-Za-z0-9][A-Za-z0-9._~-]*$/, 'A client id uses letters, digits, ".", "_", "~" and "-".')
    .optional()
    .describe(
      'Derived from the names when absent (`sa-<organization>-<name>` for a service account). `sa-` makes a service account.',
    ),
  name: clientFields.name,
  kind: clientFields.kind
    .optional()
    .describe('`service-account` when the client id starts with `sa-`, else `application` (default).'),
  tenantName: OrganizationReference.optional().describe(
    'The organization the client is bound to (its tokens carry its `org_id`). Required for a service account.',
  ),
  redirectUris: clientFields.redirectUris.describe('Applications: at least one. HTTPS, or http for localhost and 127.0.0.1.'),
  postLogoutRedirectUris: clientFields.postLogoutRedirectUris,
  frontchannelLogoutUri: clientFields.frontchannelLogoutUri,
  backchannelLogoutUri: clientFields.backchannelLogoutUri,
  backchannelLogoutSessionRequired: clientFields.backchannelLogoutSessionRequired,
  scopes: clientFields.scopes.describe('Scope rows that exist (or are seeded in this file); platform-only scopes are allowed.'),
  refreshTokenLifetime: clientFields.refreshTokenLifetime,
  envFile: z
    .string()
    .trim()
    .min(1)
    .optional()
    .describe('Where to write the new client’s OIDC_* / BFF_* variables (mode 0600), relative to the seed file.'),
});

/** The kind a seeded client gets: a `sa-` client id makes a service account. */
export function seededClientKind(client: Pick<SeedClient, 'clientId' | 'kind'>): 'application' | 'service-account' {
  return client.clientId?.startsWith('sa-') ? 'service-account' : (client.kind ?? 'application');
}

/** The seed file of `idt seed` (docs/seed-file.md). */
export const SeedFileSchema = z
  .strictObject({
    $schema: z.string().optional().describe('The JSON Schema of this file, for editors.'),
    admin: SeedAdmin.optional(),
    organizations: z.array(SeedOrganization).max(1000).optional(),
    users: z.array(SeedUser).max(10_000).optional(),
    scopes: z.array(SeedScope).max(500).optional(),
    clients: z.array(SeedClient).max(1000).optional(),
  })
  .superRefine((seed, ctx) => {
    const envFiles = new Map<string, number>();
    (seed.clients ?? []).forEach((client, index) => {
      const kind = seededClientKind(client);
      const path = ['clients', index];
      if (client.clientId?.startsWith('sa-') && client.kind === 'application') {
        ctx.addIssue({
          code: 'custom',
          path: [...path, 'kind'],
          message: 'A client id starting with "sa-" is a service account.',
        });
      }
      if (client.kind === 'service-account' && client.clientId !== undefined && !client.clientId.startsWith('sa-')) {
        ctx.addIssue({
          code: 'custom',
          path: [...path, 'clientId'],
          message: 'A service account’s client id starts with "sa-".',
        });
      }
      if (kind === 'service-account' && client.tenantName === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: [...path, 'tenantName'],
          message: 'A service account is bound to an organization: name it in tenantName.',
        });
      }
      if (kind === 'application' && (client.redirectUris ?? []).length === 0) {
        ctx.addIssue({
          code: 'custom',
          path: [...path, 'redirectUris'],
          message: 'An application needs at least one redirect URI.',
        });
      }
      if (client.envFile !== undefined) {
        const first = envFiles.get(client.envFile);
        if (first !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: [...path, 'envFile'],
            message: `clients[${first}] writes ${client.envFile} too; give each client its own env file.`,
          });
        } else envFiles.set(client.envFile, index);
      }
    });
  })
  .describe(
    'An idt seed file: the first administrator, organizations, users and memberships, scope rows and first-party clients.',
  );

/** A seed file as written. */
export type SeedFileInput = z.input<typeof SeedFileSchema>;
/** A validated seed file. */
export type SeedFile = z.output<typeof SeedFileSchema>;
/** A validated seeded client. */
export type SeedClient = z.output<typeof SeedClient>;

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Replaces `${NAME}` in every string with the environment variable, collecting the unset ones by member path. */
function interpolate(
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
  path: Array<string | number>,
  missing: Record<string, string[]>,
): unknown {
  if (typeof value === 'string') {
    return value.replace(VARIABLE, (_match, name: string) => {
      const replacement = env[name];
      if (replacement === undefined) {
        const key = memberPath(path);
        missing[key] = [...(missing[key] ?? []), `The environment variable ${name} is not set.`];
        return '';
      }
      return replacement;
    });
  }
  if (Array.isArray(value)) return value.map((item, index) => interpolate(item, env, [...path, index], missing));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item, env, [...path, key], missing)]));
  }
  return value;
}

/** A seed document checked against the schema: the valid file, or every fault of the document. */
export interface CheckedSeed {
  /** The validated file; `undefined` when {@link errors} has faults. */
  readonly seed: SeedFile | undefined;
  /** The faults by member path (`clients[0].tenantName`), placeholders that name unset variables included. */
  readonly errors: Readonly<Record<string, string[]>>;
  /** The document with its placeholders replaced, as it was checked (for checks of what it refers to). */
  readonly document: unknown;
}

/**
 * Checks a parsed seed document without throwing: `${NAME}` placeholders in
 * strings are replaced from `env` first, and every fault is collected, unset
 * variables and schema faults alike.
 */
export function checkSeed(document: unknown, env: Readonly<Record<string, string | undefined>> = {}): CheckedSeed {
  const missing: Record<string, string[]> = {};
  const interpolated = interpolate(document ?? {}, env, [], missing);
  const parsed = SeedFileSchema.safeParse(interpolated);
  // An unset variable is the fault of its field; the blank it left is not reported as well.
  const errors: Record<string, string[]> = { ...missing };
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const keys = issue.code === 'unrecognized_keys' ? issue.keys.map((key) => [...issue.path, key]) : [issue.path];
      for (const key of keys) {
        const field = memberPath(key.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment)));
        if (missing[field]) continue;
        const message = issue.code === 'unrecognized_keys' ? 'Unknown field.' : issue.message;
        errors[field] = [...new Set([...(errors[field] ?? []), message])];
      }
    }
  }
  const valid = parsed.success && Object.keys(errors).length === 0;
  return { seed: valid ? parsed.data : undefined, errors, document: interpolated };
}

/**
 * Validates a parsed seed document: `${NAME}` placeholders in strings are
 * replaced from `env` first.
 *
 * @throws ValidationProblem whose `errors` name every bad field (`clients[0].tenantName`).
 */
export function parseSeed(
  document: unknown,
  env: Readonly<Record<string, string | undefined>> = {},
  name = 'The seed',
): SeedFile {
  const { seed, errors } = checkSeed(document, env);
  if (!seed) throw new ValidationProblem(errors, `${name} is invalid.`);
  return seed;
}

/** A 1-based line and column of `text` at `offset`, as editors show them. */
function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lines = before.split('\n');
  return { line: lines.length, column: (lines.at(-1)?.length ?? 0) + 1 };
}

/**
 * Where a YAML error is, as an editor would point at it: the yaml library
 * puts some errors at the start of the line's indentation (point at its
 * first character instead), and a missing closing quote at the end of the
 * file (point at the opening quote).
 */
function yamlErrorPosition(text: string, error: YAMLParseError): { line: number; column: number } {
  let offset = error.pos[0];
  if (error.code === 'MISSING_CHAR' && /^Missing closing .?quote/.test(error.message)) {
    const quote = error.message.includes("'") ? "'" : '"';
    const opening = openingQuote(text, offset, quote);
    if (opening !== undefined) return lineAndColumn(text, opening);
  }
  // Blanks at the offset: the fault is the first character after them on that line.
  while (offset < text.length && (text[offset] === ' ' || text[offset] === '\t')) offset++;
  if (offset >= text.length || text[offset] === '\n' || text[offset] === '\r') offset = error.pos[0];
  return lineAndColumn(text, offset);
}

/** The offset of the quote that opens the string still open at `end`: the last one before it that is not escaped. */
function openingQuote(text: string, end: number, quote: string): number | undefined {
  for (let index = Math.min(end, text.length) - 1; index >= 0; index--) {
    if (text[index] !== quote) continue;
    // `\"` inside double quotes and `''` inside single quotes do not end a string.
    if (quote === '"' && text[index - 1] === '\\') continue;
    if (quote === "'" && text[index - 1] === "'") {
      index--;
      continue;
    }
    return index;
  }
  return undefined;
}

/** What the JSON parser says, with the line and column of the fault where it gives its position. */
function jsonFault(text: string, error: Error): string {
  const message = error.message.split('\n')[0] ?? '';
  const position = /at position (\d+)/.exec(message);
  if (position) {
    const { line, column } = lineAndColumn(text, Number(position[1]));
    return `line ${line}, column ${column}: ${message.replace(/ in JSON at position \d+.*$/, '').replace(/ at position \d+.*$/, '')}.`;
  }
  if (/Unexpected end of JSON input/.test(message)) {
    const { line, column } = lineAndColumn(text, text.trimEnd().length);
    return `line ${line}, column ${column}: the file ends before the JSON does.`;
  }
  // `Unexpected token ',', "{ …" is not valid JSON`: the token, without the document quoted after it,
  // at the place a YAML parser (JSON is YAML) finds the fault, when it finds one.
  const reason = `${message.replace(/, ".*$/, '').replace(/\s*$/, '')}.`;
  const located = parseDocument(text, { schema: 'json' }).errors[0]?.linePos?.[0];
  return located ? `line ${located.line}, column ${located.col}: ${reason}` : reason;
}

/**
 * Reads a seed file and checks it without throwing for its faults: JSON for
 * `.json`, YAML otherwise.
 *
 * @throws CliError `Cli.SeedFileUnreadable` when the file cannot be read or parsed, naming the line and column of a syntax error.
 */
export async function readSeedFile(path: string, env: Readonly<Record<string, string | undefined>> = {}): Promise<CheckedSeed> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new CliError('Cli.SeedFileUnreadable', `Cannot read the seed file ${path}: ${(error as Error).message}`);
  }
  const json = path.endsWith('.json');
  let document: unknown;
  try {
    document = json ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    let fault: string;
    if (error instanceof YAMLParseError) {
      const { line, column } = yamlErrorPosition(text, error);
      const reason = (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
      fault = `line ${line}, column ${column}: ${reason}.`;
    } else {
      fault = jsonFault(text, error as Error);
    }
    throw new CliError('Cli.SeedFileUnreadable', `${basename(path)} is not valid ${json ? 'JSON' : 'YAML'}: ${fault}`, {
      hints: ['Fix the file there (line and column as your editor shows them) and run the command again.'],
    });
  }
  return checkSeed(document, env);
}

/**
 * Reads and validates a seed file: JSON for `.json`, YAML otherwise.
 *
 * @throws CliError `Cli.SeedFileUnreadable` when the file cannot be read or parsed;
 *   ValidationProblem naming every bad field.
 *
 * @example
 * const seed = await loadSeedFile('seed.yaml', process.env);
 */
export async function loadSeedFile(path: string, env: Readonly<Record<string, string | undefined>> = {}): Promise<SeedFile> {
  const { seed, errors } = await readSeedFile(path, env);
  if (!seed) throw new ValidationProblem(errors, `The seed file ${basename(path)} is invalid.`);
  return seed;
}

/** The JSON Schema (draft 2020-12) of seed files, as shipped in `schema/seed.schema.json`. */
export function seedJsonSchema(): Record<string, unknown> {
  const { $schema, ...schema } = z.toJSONSchema(SeedFileSchema, { io: 'input', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return { $schema, title: 'idt seed file', ...schema };
}
