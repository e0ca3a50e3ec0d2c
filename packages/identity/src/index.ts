/**
 * The identity module of idt: users, organizations, memberships, roles and
 * setup mode. Persistence adapters live in `@idt/identity/knex`.
 *
 * @packageDocumentation
 */
import './problems.js';

export { createSetupRoutes } from './http/routes/setup.js';
export type { Argon2Options, PasswordHasher } from './passwords.js';
export { createArgon2Hasher, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from './passwords.js';
export { IdentityCodes } from './problems.js';
export { EmailSchema, OrganizationNameSchema, PasswordSchema, PersonNameSchema } from './schemas.js';
export type { SetupResult, SetupService, SetupServiceOptions } from './setup/service.js';
export { createSetupService, SetupAdminInput } from './setup/service.js';
export type { FirstAdministrator, SetupStore } from './setup/store.js';
export { slugify } from './slug.js';
