import { resolve } from 'node:path';
import { randomToken } from '@idt/core';
import {
  type AccountsActor,
  type IdentityServices,
  isBuiltInRole,
  normalizeRoleName,
  type OrganizationRecord,
} from '@idt/identity';
import type { ClientRecord, OidcServices } from '@idt/oidc';
import { ProblemError, toProblemError, ValidationProblem } from '@idt/problem';
import { OPERATOR } from '../context.js';
import { assertEnvFileFree, type EnvFileSource, writeClientEnvFile } from '../env-file.js';
import { CliError, usageError } from '../errors.js';
import { type SeedClient, type SeedFile, seededClientKind } from './schema.js';

/** The services a seed is applied through: an `idt.services` with identity, and oidc for scopes and clients. */
export interface SeedServices {
  readonly identity: IdentityServices;
  readonly oidc?: OidcServices;
}

/** The modules a seed needs: identity, and oidc when it has scopes or clients. */
export function seedModules(seed: SeedFile): Array<'identity' | 'oidc'> {
  return (seed.scopes?.length ?? 0) + (seed.clients?.length ?? 0) > 0 ? ['identity', 'oidc'] : ['identity'];
}

/** What seeding did with one entry of the file. */
export type SeedOutcome = 'created' | 'updated' | 'unchanged' | 'skipped';

/** One entry of a seed report. */
export interface SeedStep {
  readonly type: 'admin' | 'scope' | 'organization' | 'user' | 'membership' | 'client';
  /** What the entry is about: an e-mail address, a name, a client id. */
  readonly name: string;
  readonly outcome: SeedOutcome;
  /** Why it was skipped or left unchanged, or what was created. */
  readonly detail?: string;
  /** The id of the user, organization or client. */
  readonly id?: string;
}

/** The secret of a client the seed created: written to its env file, or to be shown once. */
export interface SeededSecret {
  readonly clientId: string;
  readonly kind: ClientRecord['kind'];
  readonly organizationId: string | null;
  readonly clientSecret: string;
  /** The env file the variables were written to. */
  readonly envFile?: string;
}

/** How many entries of one kind ended in each outcome. */
export type SeedCounts = Readonly<Record<SeedOutcome, number>>;

/** An env file of a new client, to write once the seed is committed. */
export interface PendingEnvFile {
  readonly path: string;
  readonly source: EnvFileSource;
}

/** What {@link applySeed} did. */
export interface SeedReport {
  readonly steps: readonly SeedStep[];
  readonly secrets: readonly SeededSecret[];
  /** Whether anything was created or updated. */
  readonly changed: boolean;
  /** The outcomes counted per kind of entry (`organization`, `user`, …), for the kinds the file has. */
  readonly counts: Readonly<Partial<Record<SeedStep['type'], SeedCounts>>>;
  /** Env files of new clients not written yet (with `writeEnvFiles: false`); {@link writeSeedEnvFiles} writes them. */
  readonly pendingEnvFiles: readonly PendingEnvFile[];
  /** The administrator the seed's admin block created, if it did. */
  readonly admin?: { readonly userId: string; readonly organizationId: string; readonly email: string };
}

/** Options of {@link applySeed}. */
export interface ApplySeedOptions {
  /** Relative `envFile` paths of the file are resolved against it (the seed file's directory). */
  readonly baseDir: string;
  /** `--env-file`: the env file of the one client that names none. */
  readonly envFile?: string;
  /** Overwrite existing env files. */
  readonly force?: boolean;
  /** Which command writes the env files, for their header. */
  readonly command?: string;
  /** Reports progress of long steps (password hashing). */
  readonly progress?: (message: string) => void;
  /**
   * Write the env files of new clients at the end (default `true`). A caller
   * that applies the seed in a transaction passes `false` and calls
   * {@link writeSeedEnvFiles} after the commit, so a rolled-back seed leaves no file.
   */
  readonly writeEnvFiles?: boolean;
}

/** Counts the outcomes of a report's steps per kind of entry. */
export function countSeedSteps(steps: readonly SeedStep[]): Partial<Record<SeedStep['type'], SeedCounts>> {
  const counts: Partial<Record<SeedStep['type'], Record<SeedOutcome, number>>> = {};
  for (const step of steps) {
    const kind = counts[step.type] ?? { created: 0, updated: 0, unchanged: 0, skipped: 0 };
    kind[step.outcome] += 1;
    counts[step.type] = kind;
  }
  return counts;
}

/**
 * Writes the env files a seed left pending (see {@link ApplySeedOptions.writeEnvFiles}).
 * Every file is attempted; when some fail, the error shows the secrets of
 * those clients once, since they cannot be fetched again.
 *
 * @throws CliError `Cli.EnvFileWriteFailed` listing the files that could not be written.
 */
export async function writeSeedEnvFiles(
  report: Pick<SeedReport, 'pendingEnvFiles'>,
  options: { readonly command?: string; readonly force?: boolean } = {},
): Promise<void> {
  const failed: Array<{ file: PendingEnvFile; error: unknown }> = [];
  for (const file of report.pendingEnvFiles) {
    try {
      await writeClientEnvFile(file.path, file.source, { command: options.command ?? 'idt seed', force: options.force ?? false });
    } catch (error) {
      failed.push({ file, error });
    }
  }
  if (failed.length === 0) return;
  throw new CliError(
    'Cli.EnvFileWriteFailed',
    `The seed was applied, but ${failed.length} env file(s) could not be written: ${failed
      .map(
        ({ file, error }) =>
          `${file.path} (${((error as Error).cause as Error | undefined)?.message ?? (error as Error).message})`,
      )
      .join('; ')}`,
    {
      hints: failed.map(
        ({ file }) => `The secret of ${file.source.client.clientId}, shown only now: ${file.source.clientSecret}`,
      ),
    },
  );
}

function isNotFound(error: unknown): boolean {
  return error instanceof ProblemError && error.code === 'Clients.NotFound';
}

/**
 * Runs the service call of one entry of the file; a refusal names the entry
 * (`users[1].memberships[0].roles[0]: …`), as the file's own validation does.
 */
async function entryAt<T>(path: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const problem = toProblemError(error);
    if (!(problem instanceof ProblemError) || problem.code === 'Server.Error' || problem.code === 'Http.ClientError') throw error;
    if (problem.code === 'Validation.Failed') {
      const errors = Object.entries(problem.errors ?? {}).map(([field, messages]) => [
        field ? `${path}.${field}` : path,
        messages,
      ]);
      throw new ValidationProblem(Object.fromEntries(errors), `The seed entry ${path} was refused.`);
    }
    throw new ProblemError(problem.code, `${path}: ${problem.detail}`, { cause: error });
  }
}

/** The members of an object, or nothing: a seed document that failed its schema check is read with care. */
function member(value: unknown, key: string): unknown {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

/** An array, or nothing. */
function items(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** A non-blank string, trimmed, or nothing. */
function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** The detail of a seed that names what does not exist: `The seed names organizations and roles that do not exist.` */
export function referencesDetail(errors: Readonly<Record<string, string[]>>): string {
  const fields = Object.keys(errors);
  const kinds = [
    fields.some((field) => /\.organization$|\.tenantName$/.test(field)) ? 'organizations' : '',
    fields.some((field) => /\.roles\[\d+\]$/.test(field)) ? 'roles' : '',
    fields.some((field) => field.endsWith('.scopes')) ? 'scopes' : '',
  ].filter(Boolean);
  const what = kinds.length <= 1 ? (kinds[0] ?? 'entries') : `${kinds.slice(0, -1).join(', ')} and ${kinds.at(-1)}`;
  return `The seed names ${what} that do not exist.`;
}

/**
 * Checks, without writing, what a seed document refers to: the organizations
 * of memberships and clients (an existing one, or one the file seeds), the
 * roles of memberships (built in, or a custom role of that existing
 * organization), and the scopes of clients (rows of the catalog or of the
 * file's `scopes`; only with the oidc module). The document may be one that
 * failed its schema check: whatever is well-formed in it is checked, so one
 * run reports every fault of the file.
 *
 * @returns the faults by member path (`users[0].memberships[1].roles[0]`); empty when there are none.
 */
export async function checkSeedReferences(services: SeedServices, document: unknown): Promise<Record<string, string[]>> {
  const { operator, roles } = services.identity.accounts;
  const errors: Record<string, string[]> = {};
  const admin = member(document, 'admin');
  const adminOrganization = [member(admin, 'email'), member(admin, 'password')].every((value) => text(value) !== undefined)
    ? text(member(admin, 'organizationName'))
    : undefined;
  const seeded = new Set(
    [...items(member(document, 'organizations')).map((entry) => text(member(entry, 'name'))), adminOrganization]
      .filter((name): name is string => name !== undefined)
      .map((name) => name.toLowerCase()),
  );
  // Each organization looked up once: the existing record (or null), and its custom role names.
  const found = new Map<string, Promise<OrganizationRecord | null>>();
  const organization = (reference: string) => {
    const key = reference.toLowerCase();
    let lookup = found.get(key);
    if (!lookup) {
      lookup = operator.findOrganization(reference).then((record) => record ?? null);
      found.set(key, lookup);
    }
    return lookup;
  };
  const customRoles = new Map<string, Promise<Set<string>>>();
  const rolesOf = (record: OrganizationRecord) => {
    let names = customRoles.get(record.id);
    if (!names) {
      const reader = { userId: null, organizationId: record.id, permissions: new Set(['RolesRead']) };
      names = roles.list(reader).then((list) => new Set(list.map((role) => role.name)));
      customRoles.set(record.id, names);
    }
    return names;
  };
  const checkReference = async (reference: string, field: string) => {
    const record = await organization(reference);
    if (!record && !seeded.has(reference.toLowerCase())) {
      errors[field] = [`No organization "${reference}" exists or is seeded in this file.`];
    }
    return record;
  };

  for (const [userIndex, user] of items(member(document, 'users')).entries()) {
    for (const [index, membership] of items(member(user, 'memberships')).entries()) {
      const path = `users[${userIndex}].memberships[${index}]`;
      const reference = text(member(membership, 'organization'));
      if (reference === undefined) continue;
      const record = await checkReference(reference, `${path}.organization`);
      if (!record && !seeded.has(reference.toLowerCase())) continue;
      // An organization the file creates has the built-in roles only.
      const known = record ? await rolesOf(record) : new Set<string>();
      for (const [roleIndex, role] of items(member(membership, 'roles')).entries()) {
        const name = text(role);
        if (name === undefined) continue;
        const normalized = normalizeRoleName(name);
        if (isBuiltInRole(normalized) || known.has(normalized)) continue;
        errors[`${path}.roles[${roleIndex}]`] = [
          `No role named "${normalized}" exists in the organization ${record?.name ?? reference}: use owner, admin, manager, user${
            record ? ' or one of its custom roles' : ''
          }.`,
        ];
      }
    }
  }
  const clients = items(member(document, 'clients'));
  for (const [index, client] of clients.entries()) {
    const reference = text(member(client, 'tenantName'));
    if (reference !== undefined) await checkReference(reference, `clients[${index}].tenantName`);
  }
  // Scopes of clients: rows of the catalog or of this file.
  if (services.oidc && clients.length > 0) {
    const known = new Set([
      ...(await services.oidc.clients.scopes()).map((row) => row.scope),
      ...items(member(document, 'scopes')).flatMap((row) => text(member(row, 'scope')) ?? []),
    ]);
    for (const [index, client] of clients.entries()) {
      const missing = items(member(client, 'scopes')).flatMap((scope) => {
        const name = text(scope);
        return name !== undefined && !known.has(name) ? [name] : [];
      });
      if (missing.length > 0) {
        errors[`clients[${index}].scopes`] = missing.map(
          (scope) => `Unknown scope "${scope}": add it to the scopes section of the file, or use a scope of the catalog.`,
        );
      }
    }
  }
  return errors;
}

/**
 * Applies a validated seed file through the services of a composition, such
 * as a composed `idt` (the same ones the HTTP API uses). Idempotent: what exists is left as it
 * is and reported `unchanged`; only new clients get a secret. Everything that
 * can be checked before writing is checked first: references to
 * organizations, the scopes of clients, and env files that would be
 * overwritten. It is atomic only when the services are composed on one
 * transaction, as `idt seed` does (see `withServicesInTransaction`), with
 * `writeEnvFiles: false` and {@link writeSeedEnvFiles} after the commit.
 *
 * @throws ValidationProblem for a reference to an unknown organization or scope; CliError
 *   `Cli.ModuleMissing` (scopes or clients without the oidc module), `Cli.EnvFileExists`
 *   (before any write) or `Cli.NoOwner`; the services' problems.
 *
 * @example
 * const idt = await createIdt({ database: 'sqlite:./data/idt.sqlite', modules: [identity(), oidc()], migrations: 'run' });
 * const report = await applySeed(idt, await loadSeedFile('seed.yaml', process.env), { baseDir: '.' });
 */
export async function applySeed(
  composed: { readonly services: SeedServices },
  seed: SeedFile,
  options: ApplySeedOptions,
): Promise<SeedReport> {
  const { identity, oidc } = composed.services;
  if (!identity) throw new CliError('Cli.ModuleMissing', 'Seeding needs the identity module; add identity() to the modules.');
  if (!oidc && seedModules(seed).includes('oidc')) {
    throw new CliError(
      'Cli.ModuleMissing',
      'The seed has scopes or clients, which need the oidc module; add oidc() to the modules.',
    );
  }
  const { setup } = identity;
  const { operator } = identity.accounts;
  // Only reached with scopes or clients, which need the oidc module (checked above).
  const clients = oidc?.clients as OidcServices['clients'];
  const steps: SeedStep[] = [];
  const secrets: SeededSecret[] = [];
  const pendingEnvFiles: PendingEnvFile[] = [];
  const seededOrganizations = new Map<string, OrganizationRecord>();
  const progress = options.progress ?? (() => undefined);

  const admin = seed.admin;
  const adminActive =
    admin !== undefined && [admin.email, admin.password, admin.organizationName].every((value) => value.trim() !== '');
  const findOrganization = async (reference: string) =>
    seededOrganizations.get(reference.toLowerCase()) ?? (await operator.findOrganization(reference));

  async function existingClient(client: SeedClient): Promise<ClientRecord | undefined> {
    if (client.clientId !== undefined) {
      try {
        return await clients.get(undefined, client.clientId);
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    }
    const organization = client.tenantName === undefined ? null : await findOrganization(client.tenantName);
    if (organization === undefined) return undefined;
    const kind = seededClientKind(client);
    return (await clients.list(organization?.id ?? null)).find((entry) => entry.name === client.name && entry.kind === kind);
  }

  // Checks before any write: what the file refers to (organizations, roles, scopes), then env files of new clients.
  const unknown = await checkSeedReferences(composed.services, seed);
  if (Object.keys(unknown).length > 0) throw new ValidationProblem(unknown, referencesDetail(unknown));

  const unnamed = (seed.clients ?? []).filter((client) => client.envFile === undefined);
  if (options.envFile !== undefined && unnamed.length > 1) {
    throw usageError(
      `--env-file names one file, but ${unnamed.length} clients of the seed name no envFile; give each client its own envFile.`,
    );
  }
  const envFiles = new Map<SeedClient, string>();
  for (const client of seed.clients ?? []) {
    const target = client.envFile !== undefined ? resolve(options.baseDir, client.envFile) : options.envFile;
    if (target === undefined) continue;
    if ([...envFiles.values()].includes(target))
      throw usageError(`Two clients would write ${target}; give each its own env file.`);
    envFiles.set(client, target);
    if ((await existingClient(client)) === undefined) await assertEnvFileFree(target, options.force ?? false);
  }

  // The first administrator: the same bootstrap as `idt setup` (SPEC 3.1).
  let createdAdmin: SeedReport['admin'];
  if (admin !== undefined) {
    const email = admin.email.trim().toLowerCase();
    if (!adminActive) {
      steps.push({
        type: 'admin',
        name: email || '(blank)',
        outcome: 'skipped',
        detail: 'email, password and organizationName are not all set',
      });
    } else if (!(await setup.isSetupRequired())) {
      steps.push({ type: 'admin', name: email, outcome: 'unchanged', detail: 'setup is already complete' });
    } else {
      progress(`Creating the first administrator ${email} (hashing the password)…`);
      const result = await entryAt('admin', () => setup.completeSetup(admin));
      createdAdmin = { ...result, email };
      steps.push({
        type: 'admin',
        name: email,
        outcome: 'created',
        detail: `owner of the platform organization ${admin.organizationName.trim()}`,
        id: result.userId,
      });
    }
  }

  if (seed.scopes && seed.scopes.length > 0) {
    const scopes = seed.scopes;
    const upserted = await entryAt('scopes', () => clients.upsertScopes(scopes));
    for (const outcome of ['created', 'updated', 'unchanged'] as const) {
      for (const scope of upserted[outcome]) steps.push({ type: 'scope', name: scope, outcome });
    }
  }

  let owner: string | undefined;
  const ownerOfNewOrganizations = async (): Promise<AccountsActor> => {
    owner ??=
      createdAdmin?.userId ??
      (adminActive ? (await operator.findUserByEmail(admin.email))?.id : undefined) ??
      (await operator.platformOwner());
    if (owner === undefined) {
      throw new CliError(
        'Cli.NoOwner',
        'New organizations need an owner: add an admin block to the seed file, or run `idt setup` first.',
      );
    }
    return { userId: owner, organizationId: null, permissions: new Set() };
  };
  for (const [index, entry] of (seed.organizations ?? []).entries()) {
    const existing = await operator.findOrganization(entry.name);
    if (existing) {
      seededOrganizations.set(entry.name.toLowerCase(), existing);
      steps.push({ type: 'organization', name: entry.name, outcome: 'unchanged', detail: existing.slug, id: existing.id });
      continue;
    }
    const actor = await ownerOfNewOrganizations();
    const created = await entryAt(`organizations[${index}]`, () => identity.accounts.organizations.create(actor, entry));
    seededOrganizations.set(entry.name.toLowerCase(), created);
    steps.push({ type: 'organization', name: entry.name, outcome: 'created', detail: created.slug, id: created.id });
  }

  let hashing = false;
  for (const [userIndex, entry] of (seed.users ?? []).entries()) {
    let userId = (await operator.findUserByEmail(entry.email))?.id;
    if (userId !== undefined) {
      steps.push({ type: 'user', name: entry.email, outcome: 'unchanged', id: userId });
    } else {
      if (!hashing) progress('Creating users (hashing passwords)…');
      hashing = true;
      const { email, firstName, lastName } = entry;
      // No password: one nobody knows, so the user signs in passwordless (drawn again should the policy
      // refuse it, e.g. a random string that happens to hold a short name).
      let password = entry.password ?? randomToken(32);
      for (let draw = 0; entry.password === undefined && draw < 5; draw++) {
        if ((await identity.passwords.policy.check(password, { email, firstName, lastName })).ok) break;
        password = randomToken(32);
      }
      ({ userId } = await entryAt(`users[${userIndex}]`, () =>
        identity.accounts.users.register({ email, password, firstName, lastName }),
      ));
      steps.push({
        type: 'user',
        name: entry.email,
        outcome: 'created',
        id: userId,
        ...(entry.password === undefined ? { detail: 'no password: signs in passwordless' } : {}),
      });
    }
    for (const [index, membership] of (entry.memberships ?? []).entries()) {
      const path = `users[${userIndex}].memberships[${index}]`;
      const organization = await findOrganization(membership.organization);
      if (!organization)
        throw new ProblemError('Identity.OrganizationNotFound', `${path}: no organization "${membership.organization}".`);
      const member = { organizationId: organization.id, userId, roles: membership.roles, status: membership.status ?? 'active' };
      const added = await entryAt(path, () => operator.addMember(member));
      steps.push({
        type: 'membership',
        name: `${entry.email} in ${organization.name}`,
        outcome: added.created ? 'created' : 'unchanged',
        detail: !added.created
          ? `already ${added.status}`
          : added.status === 'pending'
            ? 'pending approval'
            : `${added.status}: ${membership.roles.join(', ')}`,
      });
    }
  }

  for (const [index, entry] of (seed.clients ?? []).entries()) {
    const existing = await existingClient(entry);
    if (existing) {
      steps.push({ type: 'client', name: existing.clientId, outcome: 'unchanged', id: existing.clientId });
      continue;
    }
    const kind = seededClientKind(entry);
    const organization = entry.tenantName === undefined ? null : await findOrganization(entry.tenantName);
    if (organization === undefined) {
      throw new ProblemError('Identity.OrganizationNotFound', `clients[${index}]: no organization "${entry.tenantName}".`);
    }
    const { clientId, envFile: _envFile, tenantName: _tenantName, kind: _kind, ...fields } = entry;
    const registration = await entryAt(`clients[${index}]`, () =>
      clients.register(
        OPERATOR,
        organization?.id ?? null,
        { ...fields, kind },
        { firstParty: kind === 'application', ...(clientId !== undefined ? { clientId } : {}) },
      ),
    );
    const { client, clientSecret } = registration;
    const where = organization ? `, ${organization.name}` : ', first-party, no organization';
    steps.push({
      type: 'client',
      name: client.clientId,
      outcome: 'created',
      detail: `${kind === 'service-account' ? 'service account' : 'application'}${where}`,
      id: client.clientId,
    });
    const target = envFiles.get(entry);
    if (target !== undefined) pendingEnvFiles.push({ path: target, source: registration });
    secrets.push({
      clientId: client.clientId,
      kind,
      organizationId: client.organizationId,
      clientSecret,
      ...(target !== undefined ? { envFile: target } : {}),
    });
  }

  const report: SeedReport = {
    steps,
    secrets,
    changed: steps.some((step) => step.outcome === 'created' || step.outcome === 'updated'),
    counts: countSeedSteps(steps),
    pendingEnvFiles,
    ...(createdAdmin ? { admin: createdAdmin } : {}),
  };
  if (options.writeEnvFiles === false) return report;
  await writeSeedEnvFiles(report, options);
  return { ...report, pendingEnvFiles: [] };
}
