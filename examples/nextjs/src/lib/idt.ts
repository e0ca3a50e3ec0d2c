/**
 * The app's idt, composed on first use and kept on `globalThis`, so that
 * Next.js's dev server, which evaluates modules again on every edit, keeps
 * one instance (one database pool, one set of background jobs).
 *
 * @packageDocumentation
 */
import { createIdt, type Idt } from '@idt/core';
import { identity } from '@idt/identity';
import { oidc } from '@idt/oidc';

/** The modules this app composes. */
const modules = () => [identity(), oidc()] as const;

/** The app's idt. */
export type ExampleIdt = Idt<ReturnType<typeof modules>>;

const cache = globalThis as typeof globalThis & { idt?: Promise<ExampleIdt> };

/**
 * The composed idt, answering under `/idt` (where `app/idt/[...path]/route.ts`
 * sits) on the origin `IDT_ISSUER` names; the database is `IDT_DATABASE_URL`.
 */
export function getIdt(): Promise<ExampleIdt> {
  cache.idt ??= createIdt({
    baseUrl: `${process.env.IDT_ISSUER ?? 'http://localhost:3000'}/idt`,
    modules: modules(),
    migrations: 'run',
  }).then((idt) => {
    idt.start();
    return idt;
  });
  return cache.idt;
}
