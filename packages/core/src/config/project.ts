import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { ConfigError, type ConfigOrigin, type IdtConfig, variableOrigin } from './config.js';

/** The project env file every idt process of a project reads: `.env` in its directory (the Node convention). */
export const PROJECT_ENV_FILE = '.env';

/** The settings of a project: the environment over its env file. */
export interface ProjectEnv extends ConfigOrigin {
  /** The variables: each one set in the environment wins over the file's. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The absolute path of the env file read; `undefined` when there was none. */
  readonly envFile: string | undefined;
  /** The variables whose value came from {@link envFile}. */
  readonly fromFile: ReadonlySet<string>;
  /**
   * The project directory: the env file's directory, else the working
   * directory. Give it to `loadConfig` as `baseDir` so relative data
   * directories and SQLite files resolve against it.
   */
  readonly directory: string;
}

/** Options of {@link loadProjectEnv}. */
export interface LoadProjectEnvOptions {
  /** The working directory (default `process.cwd()`). */
  readonly cwd?: string;
  /** The environment (default `process.env`); its variables win over the file's. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/**
 * Reads the project env file, so the reference server, `npm start` and the
 * `idt` CLI resolve the same settings: `IDT_ENV_FILE` when set (a path
 * relative to the working directory; `none` reads no file), else `.env` in
 * the working directory when it exists. Variables already set in `env` win
 * over the file's. Relative paths in the settings resolve against the file's
 * directory ({@link ProjectEnv.directory}).
 *
 * @throws ConfigError naming `IDT_ENV_FILE` when the file it names is missing, or the file when it cannot be read.
 *
 * @example
 * const project = loadProjectEnv();
 * const config = loadConfig(project.env, {}, { baseDir: project.directory, origin: project });
 */
export function loadProjectEnv(options: LoadProjectEnvOptions = {}): ProjectEnv {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const named = env.IDT_ENV_FILE?.trim();
  if (named === 'none') return { env, envFile: undefined, fromFile: new Set(), directory: cwd };
  let file: string | undefined;
  if (named) {
    file = resolve(cwd, named);
    if (!existsSync(file)) {
      throw new ConfigError([
        `IDT_ENV_FILE: ${file} does not exist; name an existing env file, or unset IDT_ENV_FILE to read ./${PROJECT_ENV_FILE} when present`,
      ]);
    }
  } else {
    const candidate = resolve(cwd, PROJECT_ENV_FILE);
    if (existsSync(candidate) && statSync(candidate).isFile()) file = candidate;
  }
  if (file === undefined) return { env, envFile: undefined, fromFile: new Set(), directory: cwd };
  let parsed: Record<string, string>;
  try {
    parsed = parseEnv(readFileSync(file, 'utf8')) as Record<string, string>;
  } catch (error) {
    throw new ConfigError([`IDT_ENV_FILE: cannot read ${file}: ${(error as Error).message}`]);
  }
  const merged: Record<string, string | undefined> = { ...env };
  const fromFile = new Set<string>();
  for (const [name, value] of Object.entries(parsed)) {
    if (merged[name] !== undefined) continue;
    merged[name] = value;
    fromFile.add(name);
  }
  return { env: merged, envFile: file, fromFile, directory: dirname(file) };
}

/**
 * Where the secret that encrypts signing keys comes from, for messages:
 * `IDT_KEY_ENCRYPTION_SECRET (set in /srv/app/.env)`, or in Development
 * without it the file `<dataDir>/key-encryption.secret`.
 */
export function keyEncryptionSecretSource(
  config: Pick<IdtConfig, 'keyEncryptionSecret' | 'environment' | 'dataDir'>,
  origin?: ConfigOrigin,
): { readonly description: string; readonly file?: string } {
  if (config.keyEncryptionSecret) {
    return { description: `IDT_KEY_ENCRYPTION_SECRET (from ${variableOrigin('IDT_KEY_ENCRYPTION_SECRET', origin)})` };
  }
  if (config.environment === 'Testing') return { description: 'the fixed secret of the Testing environment' };
  const file = resolve(config.dataDir, 'key-encryption.secret');
  return { description: `the ${config.environment} secret file ${file}`, file };
}

/**
 * A "Cannot decrypt a signing key" failure rewritten to name where the secret
 * was read from and how to fix it; any other error unchanged.
 */
export function explainKeyDecryption(
  error: unknown,
  config: Pick<IdtConfig, 'keyEncryptionSecret' | 'environment' | 'dataDir' | 'databaseUrl'>,
  origin?: ConfigOrigin,
): unknown {
  if (!(error instanceof Error) || !error.message.startsWith('Cannot decrypt')) return error;
  const source = keyEncryptionSecretSource(config, origin);
  const fix = source.file
    ? `use the data directory the database was created with (IDT_DATA_DIR; run from the project directory whose ${PROJECT_ENV_FILE} names it), or start over with a fresh database`
    : 'set IDT_KEY_ENCRYPTION_SECRET to the secret the database was created with';
  const explained = new Error(
    `${error.message.replace(/[.\s]+$/, '')}. The secret was read from ${source.description}. Fix: ${fix}.`,
    { cause: error },
  );
  explained.name = 'KeyDecryptionError';
  return explained;
}
