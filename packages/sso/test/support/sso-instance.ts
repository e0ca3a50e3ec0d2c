import type { IdtConfigOverrides } from '@idt/core';
import {
  caller,
  createTestIdt,
  seedWorld,
  type TestDialect,
  type TestHost,
  type TestIdt,
  testReferenceModules,
} from '@idt/testing';
import type { SsoOptions } from '../../src/index.js';

/** The reference modules with `sso()`. */
export function ssoModules(options: SsoOptions = {}) {
  return testReferenceModules({ sso: options });
}

/** An in-process idt with the sso module, the world of `seedWorld` and a JSON caller; `config` applies settings (e.g. its issuer). */
export async function startSsoInstance(options: {
  dialect: TestDialect;
  sso?: SsoOptions;
  env?: Record<string, string>;
  config?: IdtConfigOverrides;
}) {
  const server = (await createTestIdt({
    dialect: options.dialect,
    modules: ssoModules(options.sso),
    ...(options.env ? { env: options.env } : {}),
    ...(options.config ? { config: options.config } : {}),
  })) as unknown as TestIdt & TestHost;
  const world = await seedWorld(server);
  return { server, world, call: caller(server), services: servicesOf(server) };
}

/** The sso module's services of a test instance. */
export function servicesOf(server: TestIdt) {
  return (server.idt.services as unknown as { sso: import('../../src/index.js').SsoServices }).sso;
}
