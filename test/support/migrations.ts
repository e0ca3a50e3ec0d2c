import { coreMigrations, type MigrationSet } from '@idt/core/knex';
import { identityMigrations } from '@idt/identity/knex';
import { inquiriesMigrations } from '@idt/inquiries/knex';
import { notificationsMigrations } from '@idt/notifications/knex';
import { oidcMigrations } from '@idt/oidc/knex';
import { platformMigrations } from '@idt/platform/knex';
import { ssoMigrations } from '@idt/sso/knex';
import { storageMigrations } from '@idt/storage/knex';

/** Every migration set of the reference server. */
export const referenceMigrationSets: readonly MigrationSet[] = [
  coreMigrations,
  identityMigrations,
  oidcMigrations,
  inquiriesMigrations,
  storageMigrations,
  notificationsMigrations,
  platformMigrations,
  ssoMigrations,
];
