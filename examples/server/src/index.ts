/**
 * The idt reference server: the modules it composes. `main.ts` serves them
 * on node:http; the `idt` CLI uses the same list when no `idt.config` is found.
 *
 * @packageDocumentation
 */
import { type CreateIdtOptions, createIdt, type Idt } from '@idt/core';
import { identity } from '@idt/identity';
import { inquiries } from '@idt/inquiries';
import { oidc } from '@idt/oidc';
import { storage } from '@idt/storage';

/** The reference set of modules. */
export const referenceModules = () => [identity(), oidc(), inquiries(), storage()] as const;

/** The reference server's modules, as a type. */
export type ReferenceModules = ReturnType<typeof referenceModules>;

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
  options: Omit<CreateIdtOptions<ReferenceModules>, 'modules'> = {},
): Promise<ReferenceServer> {
  return createIdt({ ...options, modules: referenceModules() });
}
