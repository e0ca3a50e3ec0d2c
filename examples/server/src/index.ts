/**
 * The idt reference server: the modules it composes. `main.ts` serves them
 * on node:http; the `idt` CLI uses the same list when no `idt.config` is found.
 *
 * @packageDocumentation
 */
import { type CreateIdtOptions, createIdt, type Idt, type IdtModule } from '@idt/core';
import { type IdentityModuleSettings, type IdentityServices, identity } from '@idt/identity';
import { type InquiriesServices, inquiries } from '@idt/inquiries';
import { type NotificationsServices, notifications } from '@idt/notifications';
import { type OidcModuleOptions, type OidcModuleSettings, type OidcServices, oidc } from '@idt/oidc';
import { type PlatformOptions, type PlatformServices, platform } from '@idt/platform';
import { type SsoOptions, type SsoServices, type SsoSettings, sso } from '@idt/sso';
import { type StorageServices, type StorageSettings, storage } from '@idt/storage';

/** Options of the reference modules' factories, each passed to its module (settings still come from the environment). */
export interface ReferenceModuleOptions {
  /** Options of `oidc()`, e.g. `backchannelLimits`. */
  readonly oidc?: OidcModuleOptions;
  /** Options of `platform()`, e.g. extra setting definitions. */
  readonly platform?: PlatformOptions;
  /** Options of `sso()`, e.g. a TXT resolver or upstream timeouts. */
  readonly sso?: SsoOptions;
}

/** The reference server's modules, as a type. */
export type ReferenceModules = readonly [
  IdtModule<'identity', IdentityServices, IdentityModuleSettings>,
  IdtModule<'oidc', OidcServices, OidcModuleSettings>,
  IdtModule<'inquiries', InquiriesServices>,
  IdtModule<'storage', StorageServices, StorageSettings>,
  IdtModule<'notifications', NotificationsServices>,
  IdtModule<'platform', PlatformServices>,
  IdtModule<'sso', SsoServices, SsoSettings>,
];

/** The reference set of modules. */
export function referenceModules(options: ReferenceModuleOptions = {}): ReferenceModules {
  return [
    identity(),
    oidc(options.oidc),
    inquiries(),
    storage(),
    notifications(),
    platform(options.platform),
    sso(options.sso),
  ] as const;
}

/** The reference server: a composed idt with every module. */
export type ReferenceServer = Idt<ReferenceModules>;

/**
 * Composes the reference server.
 *
 * @example
 * const idt = await createReferenceServer({ database: 'sqlite:./data/idt.sqlite', migrations: 'run' });
 * const { url } = await idt.listen(8080);
 */
export function createReferenceServer(
  options: Omit<CreateIdtOptions<ReferenceModules>, 'modules'> & {
    /** Options of the module factories (e.g. `oidc: { backchannelLimits }`). */
    readonly moduleOptions?: ReferenceModuleOptions;
  } = {},
): Promise<ReferenceServer> {
  const { moduleOptions, ...rest } = options;
  return createIdt({ ...rest, modules: referenceModules(moduleOptions) });
}
