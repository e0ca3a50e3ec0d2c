import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { randomToken } from '@idt/core';
import type { ClientRecord } from '@idt/oidc';
import { CliError } from './errors.js';

/** What an env file is written from: a registration or rotation response (SPEC 2.1). */
export interface EnvFileSource {
  readonly client: Pick<ClientRecord, 'clientId' | 'kind' | 'name' | 'redirectUris' | 'postLogoutRedirectUris' | 'scopes'>;
  readonly clientSecret: string;
  readonly issuer: string;
  readonly apiBaseUrl: string;
}

/** A fresh cookie secret (SPEC 5.4 asks for at least 32 characters): 32 random bytes, base64url (43 characters). */
export function generateCookiePassword(): string {
  return randomToken(32);
}

/**
 * The environment variables of a client (SPEC 2.1), in file order. A service
 * account gets `OIDC_ISSUER`, `OIDC_SERVICE_CLIENT_ID`,
 * `OIDC_SERVICE_CLIENT_SECRET`, `OIDC_SERVICE_SCOPES` and `BFF_API_BASE_URL`;
 * an application `OIDC_ISSUER`, `OIDC_CLIENT_ID`, `OIDC_CLIENT_SECRET`,
 * `OIDC_REDIRECT_URI`, `OIDC_POST_LOGOUT_REDIRECT_URI` (when it has one),
 * `OIDC_SCOPES`, `BFF_API_BASE_URL` and a fresh `COOKIE_PASSWORD`. Scopes are
 * space-separated; the URIs are the client's first ones.
 *
 * @example
 * const variables = envFileVariables(registration);
 * // [['OIDC_ISSUER', 'https://id.example.com'], ['OIDC_SERVICE_CLIENT_ID', 'sa-acme-reporting'], …]
 */
export function envFileVariables(
  source: EnvFileSource,
  options: { cookiePassword?: string } = {},
): Array<[name: string, value: string]> {
  const { client } = source;
  const scopes = client.scopes.join(' ');
  if (client.kind === 'service-account') {
    return [
      ['OIDC_ISSUER', source.issuer],
      ['OIDC_SERVICE_CLIENT_ID', client.clientId],
      ['OIDC_SERVICE_CLIENT_SECRET', source.clientSecret],
      ['OIDC_SERVICE_SCOPES', scopes],
      ['BFF_API_BASE_URL', source.apiBaseUrl],
    ];
  }
  const variables: Array<[string, string]> = [
    ['OIDC_ISSUER', source.issuer],
    ['OIDC_CLIENT_ID', client.clientId],
    ['OIDC_CLIENT_SECRET', source.clientSecret],
    ['OIDC_REDIRECT_URI', client.redirectUris[0] ?? ''],
  ];
  const postLogout = client.postLogoutRedirectUris[0];
  if (postLogout !== undefined) variables.push(['OIDC_POST_LOGOUT_REDIRECT_URI', postLogout]);
  variables.push(
    ['OIDC_SCOPES', scopes],
    ['BFF_API_BASE_URL', source.apiBaseUrl],
    ['COOKIE_PASSWORD', options.cookiePassword ?? generateCookiePassword()],
  );
  return variables;
}

/** Quotes a value when dotenv parsers (Node's `--env-file`, dotenv) would otherwise misread it. */
function quote(value: string): string {
  if (/^[A-Za-z0-9_./:@+,=~%-]*$/.test(value)) return value;
  return `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;
}

/** Renders an env file: comment lines, then `NAME=value` lines. */
export function renderEnvFile(variables: ReadonlyArray<readonly [string, string]>, comments: readonly string[] = []): string {
  const lines = [...comments.map((line) => `# ${line}`), ...variables.map(([name, value]) => `${name}=${quote(value)}`)];
  return `${lines.join('\n')}\n`;
}

/** Whether a file exists at `path`. */
async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

/**
 * Refuses a path that already exists unless `force` is set; checked before a
 * secret is created, so a refusal loses nothing.
 *
 * @throws CliError `Cli.EnvFileExists`.
 */
export async function assertEnvFileFree(path: string, force: boolean): Promise<void> {
  if (!force && (await exists(path))) {
    throw new CliError('Cli.EnvFileExists', `${path} exists; pass --force to overwrite it.`);
  }
}

/**
 * Writes an env file with mode 0600. Without `force` the file is created
 * exclusively (an existing file is never touched); with `force` it replaces
 * the old one atomically. Missing directories are created.
 *
 * @throws CliError `Cli.EnvFileExists` when the file exists and `force` is not set.
 */
export async function writeEnvFile(path: string, content: string, options: { force?: boolean } = {}): Promise<void> {
  const target = resolve(path);
  await mkdir(dirname(target), { recursive: true });
  const written = options.force ? join(dirname(target), `.${basename(target)}.${randomBytes(6).toString('hex')}.tmp`) : target;
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(written, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new CliError('Cli.EnvFileExists', `${path} exists; pass --force to overwrite it.`);
    }
    throw error;
  }
  try {
    await handle.writeFile(content, 'utf8');
    // The umask may have narrowed the mode further, never widened it; make it exactly 0600.
    await handle.chmod(0o600);
  } finally {
    await handle.close();
  }
  if (written !== target) {
    try {
      await rename(written, target);
      await chmod(target, 0o600);
    } catch (error) {
      await rm(written, { force: true });
      throw error;
    }
  }
}

/** The comment lines at the top of a client's env file. */
export function envFileComments(client: Pick<ClientRecord, 'clientId' | 'kind' | 'name'>, command: string): string[] {
  const kind = client.kind === 'service-account' ? 'Service account' : 'Application';
  return [
    `${kind} ${client.clientId} (${client.name}), written by \`${command}\` at ${new Date().toISOString()}.`,
    'Keep this file secret: it holds the client secret.',
  ];
}

/**
 * Writes the env file of a new secret (see {@link writeEnvFile}). When that
 * fails the error carries the secret, since it cannot be fetched again.
 *
 * @returns the names of the variables written.
 * @throws CliError `Cli.EnvFileWriteFailed` (with the secret as a hint) or `Cli.EnvFileExists`.
 */
export async function writeClientEnvFile(
  path: string,
  source: EnvFileSource,
  options: { command: string; force?: boolean },
): Promise<string[]> {
  const variables = envFileVariables(source);
  try {
    await writeEnvFile(path, renderEnvFile(variables, envFileComments(source.client, options.command)), {
      force: options.force ?? false,
    });
  } catch (error) {
    throw new CliError('Cli.EnvFileWriteFailed', `Could not write ${path}: ${(error as Error).message}`, {
      hints: [`The secret of ${source.client.clientId}, shown only now: ${source.clientSecret}`],
      cause: error,
    });
  }
  return variables.map(([name]) => name);
}
