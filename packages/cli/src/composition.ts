import { access } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type AnyIdtModule, type CreateIdtOptions, orderModules } from '@idt/core';
import { identity } from '@idt/identity';
import { oidc } from '@idt/oidc';
import { CliError } from './errors.js';

/** The config files `idt` looks for in the working directory, in this order, when `--config` is not given. */
export const CONFIG_FILE_NAMES = Object.freeze(['idt.config.ts', 'idt.config.mts', 'idt.config.mjs', 'idt.config.js']);

/** The options a config file declares: what its default export is or returns. */
export type IdtConfigOptions = CreateIdtOptions<readonly AnyIdtModule[]>;

/** The modules a command works on, and where they were declared. */
export interface Composition {
  /** The config file, or `undefined` for the reference modules (no config file). */
  readonly file: string | undefined;
  /** The options of the config file; only `modules` without one. */
  readonly options: IdtConfigOptions;
  /** The modules in set-up order. */
  readonly modules: readonly AnyIdtModule[];
  /** Where the modules come from, for messages: `./idt.config.mjs`, or `the reference modules`. */
  readonly source: string;
  /** Whether a module is part of the composition. */
  has(id: string): boolean;
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The config file of a run: `--config` resolved against `cwd`, else the
 * first of {@link CONFIG_FILE_NAMES} in `cwd`, else `undefined`.
 *
 * @throws CliError `Cli.ConfigNotFound` when `--config` names no file.
 */
export async function findConfigFile(cwd: string, explicit?: string): Promise<string | undefined> {
  if (explicit !== undefined) {
    const path = resolve(cwd, explicit);
    if (!(await exists(path))) throw new CliError('Cli.ConfigNotFound', `No config file at ${path} (--config ${explicit}).`);
    return path;
  }
  for (const name of CONFIG_FILE_NAMES) {
    const path = join(cwd, name);
    if (await exists(path)) return path;
  }
  return undefined;
}

/** `tsImport` of `tsx/esm/api`. */
type TsImport = (specifier: string, parentURL: string) => Promise<unknown>;

/** How a config file is imported; tests replace the native import to act as a Node.js without type stripping. */
export interface ConfigImporters {
  /** The runtime's own `import()`. */
  readonly native?: (url: string) => Promise<unknown>;
  /** Finds tsx's `tsImport`, `undefined` when tsx is not installed. */
  readonly tsx?: (configFile: string) => Promise<TsImport | undefined>;
}

/** Codes of a runtime that cannot load a TypeScript file by itself (no type stripping, or syntax it cannot strip). */
const TYPESCRIPT_UNSUPPORTED = new Set([
  'ERR_UNKNOWN_FILE_EXTENSION',
  'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX',
  'ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING',
]);

function isModuleNotFound(error: unknown, specifier: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String(message).includes(specifier);
}

function tsImportOf(namespace: unknown): TsImport | undefined {
  const api = namespace as { tsImport?: TsImport; default?: { tsImport?: TsImport } };
  return api.tsImport ?? api.default?.tsImport;
}

/** tsx's ESM API: the one next to the CLI, else the project's (beside the config file). */
async function findTsx(configFile: string): Promise<TsImport | undefined> {
  try {
    return tsImportOf(await import('tsx/esm/api'));
  } catch (error) {
    if (!isModuleNotFound(error, 'tsx')) throw error;
  }
  try {
    const path = createRequire(join(dirname(configFile), 'package.json')).resolve('tsx/esm/api');
    return tsImportOf(await import(pathToFileURL(path).href));
  } catch (error) {
    if (isModuleNotFound(error, 'tsx')) return undefined;
    throw error;
  }
}

/**
 * Imports a config file. TypeScript (`.ts`, `.mts`) is imported directly
 * when the runtime can (type stripping, or a TypeScript loader such as tsx
 * already registered), else through tsx's `tsImport` when tsx is installed.
 *
 * @throws CliError `Cli.ConfigTypeScript` for a TypeScript file neither the runtime nor tsx can load.
 */
export async function importConfigFile(file: string, importers: ConfigImporters = {}): Promise<unknown> {
  const url = pathToFileURL(file).href;
  const native = importers.native ?? ((specifier: string) => import(specifier));
  if (!/\.[cm]?ts$/.test(file)) return native(url);
  try {
    return await native(url);
  } catch (error) {
    const code = (error as { code?: unknown } | undefined)?.code;
    if (typeof code !== 'string' || !TYPESCRIPT_UNSUPPORTED.has(code)) throw error;
  }
  const tsImport = await (importers.tsx ?? findTsx)(file);
  if (!tsImport) {
    throw new CliError(
      'Cli.ConfigTypeScript',
      `${file} is TypeScript, which Node.js ${process.version} cannot load by itself, and tsx is not installed.`,
      { hints: ['Install tsx (npm install --save-dev tsx), or write the config as idt.config.mjs.'] },
    );
  }
  return tsImport(url, import.meta.url);
}

function isModule(value: unknown): value is AnyIdtModule {
  const candidate = value as { id?: unknown; setup?: unknown } | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.id === 'string' &&
    typeof candidate.setup === 'function'
  );
}

/**
 * Loads a config file: its default export is the options of `createIdt`
 * (`defineIdtConfig({ modules: [...] })`), or a function, sync or async,
 * returning them.
 *
 * @throws CliError `Cli.ConfigInvalid` when it cannot be imported or exports no such options; `Cli.ConfigTypeScript`.
 */
export async function loadConfigFile(file: string, importers: ConfigImporters = {}): Promise<IdtConfigOptions> {
  const invalid = (detail: string, cause?: unknown) =>
    new CliError('Cli.ConfigInvalid', `The config file ${file} ${detail}`, cause === undefined ? {} : { cause });
  let namespace: unknown;
  try {
    namespace = await importConfigFile(file, importers);
  } catch (error) {
    if (error instanceof CliError) throw error;
    const failure = invalid(`could not be loaded: ${String((error as Error)?.message ?? error).split('\n')[0]}`, error);
    const code = (error as { code?: unknown } | undefined)?.code;
    if (/\.c?ts$/.test(file) && (code === 'ERR_PACKAGE_PATH_NOT_EXPORTED' || code === 'ERR_REQUIRE_ESM')) {
      // tsx compiled it as CommonJS (no "type": "module"), which cannot require the ESM-only idt packages.
      throw new CliError(failure.code, failure.message, {
        cause: error,
        hints: ['The idt packages are ES modules: name the file idt.config.mts, or set "type": "module" in package.json.'],
      });
    }
    throw failure;
  }
  let exported = (namespace as { default?: unknown } | undefined)?.default;
  // A TypeScript file in a CommonJS package, compiled by tsx: its exports arrive as the default.
  const nested = exported as { __esModule?: unknown; default?: unknown } | null | undefined;
  if (typeof nested === 'object' && nested !== null && nested.__esModule === true) exported = nested.default;
  if (exported === undefined) throw invalid('has no default export; export default defineIdtConfig({ modules: [...] }).');
  if (typeof exported === 'function') {
    try {
      exported = await (exported as () => unknown)();
    } catch (error) {
      throw invalid(`failed: its default export threw ${String((error as Error)?.message ?? error).split('\n')[0]}`, error);
    }
  }
  const modules = (exported as { modules?: unknown } | null)?.modules;
  if (typeof exported !== 'object' || exported === null || !Array.isArray(modules)) {
    throw invalid('must export the options of createIdt, with modules: export default defineIdtConfig({ modules: [...] }).');
  }
  const notModules = modules.flatMap((module, index) => (isModule(module) ? [] : [index]));
  if (notModules.length > 0) {
    throw invalid(
      `lists something that is not an idt module at modules[${notModules.join('], modules[')}]; call the factory: identity(), not identity.`,
    );
  }
  return exported as IdtConfigOptions;
}

/** The optional packages of the reference composition, in set-up order, and their module factories. */
const OPTIONAL_REFERENCE_PACKAGES = [
  { name: '@idt/inquiries', load: async () => (await import('@idt/inquiries')).inquiries() },
  { name: '@idt/storage', load: async () => (await import('@idt/storage')).storage() },
  { name: '@idt/notifications', load: async () => (await import('@idt/notifications')).notifications() },
  { name: '@idt/platform', load: async () => (await import('@idt/platform')).platform() },
  { name: '@idt/sso', load: async () => (await import('@idt/sso')).sso() },
] as const;

/**
 * The reference modules, used without a config file: identity and oidc,
 * plus inquiries, storage, notifications, platform and sso when those packages are installed.
 */
export async function referenceModules(): Promise<AnyIdtModule[]> {
  const modules: AnyIdtModule[] = [identity(), oidc()];
  for (const optional of OPTIONAL_REFERENCE_PACKAGES) {
    try {
      modules.push(await optional.load());
    } catch (error) {
      if (!isModuleNotFound(error, optional.name)) throw error;
    }
  }
  return modules;
}

/**
 * The composition of a run: the config file's (`--config`, else
 * `idt.config.{ts,mts,mjs,js}` in `cwd`), else the reference modules.
 *
 * @throws CliError `Cli.ConfigNotFound`, `Cli.ConfigInvalid` (also for a module whose required module is missing), `Cli.ConfigTypeScript`.
 */
export async function loadComposition(cwd: string, explicit?: string, importers: ConfigImporters = {}): Promise<Composition> {
  const file = await findConfigFile(cwd, explicit);
  const options: IdtConfigOptions = file ? await loadConfigFile(file, importers) : { modules: await referenceModules() };
  let modules: AnyIdtModule[];
  try {
    modules = orderModules(options.modules);
  } catch (error) {
    throw new CliError('Cli.ConfigInvalid', `${file ?? 'The reference modules'}: ${(error as Error).message}`, { cause: error });
  }
  const shown = file === undefined ? undefined : relative(cwd, file);
  const source =
    file === undefined || shown === undefined ? 'the reference modules' : shown.startsWith('..') ? file : `./${shown}`;
  const ids = new Set(modules.map((module) => module.id));
  return { file, options, modules, source, has: (id) => ids.has(id) };
}
