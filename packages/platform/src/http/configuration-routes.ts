import { auditRequestOf, defineRoute, json, noContent, type Route } from '@idt/core';
import { z } from 'zod';
import { callerOf } from '../access.js';
import {
  FlagCreateInput,
  FlagOverrideInput,
  FlagOverrideQuery,
  FlagOverrideResponse,
  FlagResponse,
  FlagUpdateInput,
  FlagValues,
  OrganizationFlagResponse,
} from '../flags/schemas.js';
import type { FlagsService } from '../flags/service.js';
import { ConfigResponse, ResolvedSettingResponse, SettingKeyParams, SettingValueInput } from '../settings/schemas.js';
import type { SettingsService } from '../settings/service.js';

const SETTINGS = ['Settings'];
const FLAGS = ['Feature flags'];
const FlagKeyParams = z.object({ key: z.string().min(1).max(200).describe('The flag key') });
const keyRules = {
  422: {
    description:
      'A `system.*` key (`Settings.SystemKeyBlocked`), an unknown key (`Settings.UnknownKey`), a key users may not override (`Settings.NotOverridable`) or too many custom keys (`Settings.CustomLimitReached`)',
  },
} as const;
const SETTING_CODES = [
  'Settings.SystemKeyBlocked',
  'Settings.UnknownKey',
  'Settings.NotOverridable',
  'Settings.CustomLimitReached',
];
const flagNotFound = { description: 'No flag has this key (`FeatureFlags.NotFound`)' } as const;

/**
 * The routes of settings (`/v1/configuration/settings`, `/v1/platform/settings`),
 * feature flags (`/v1/configuration/flags`, `/v1/platform/flags`) and the
 * merged `/v1/configuration/config`.
 *
 * @example
 * routes.push(...createConfigurationRoutes(settings, flags));
 */
export function createConfigurationRoutes(settings: SettingsService, flags: FlagsService): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/configuration/settings',
      operationId: 'listOrganizationSettings',
      summary: 'Your organization’s settings',
      description:
        'Every defined setting (without `system.*`) with its value and source, then the organization’s `custom.*` keys.',
      tags: SETTINGS,
      permissions: ['ConfigurationRead'],
      responses: { 200: { description: 'The settings', schema: z.array(ResolvedSettingResponse) } },
      handler: async ({ principal }) => json(await settings.listOrganization(callerOf(principal))),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/configuration/settings/me',
      operationId: 'listMySettings',
      summary: 'The settings you may override, as they resolve for you',
      tags: SETTINGS,
      responses: { 200: { description: 'The settings', schema: z.array(ResolvedSettingResponse) } },
      handler: async ({ principal }) => json(await settings.listMine(callerOf(principal))),
    }),
    defineRoute({
      method: 'PUT',
      path: '/v1/configuration/settings/me/{key}',
      operationId: 'setMySetting',
      summary: 'Override a setting for yourself',
      description: 'Only keys whose definition is user-overridable.',
      tags: SETTINGS,
      request: { params: SettingKeyParams, body: SettingValueInput },
      problemCodes: SETTING_CODES,
      responses: { 200: { description: 'The setting as it now resolves for you', schema: ResolvedSettingResponse }, ...keyRules },
      handler: async (route) =>
        json(await settings.setMine(callerOf(route.principal), route.params.key, route.body.value, auditRequestOf(route))),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/configuration/settings/me/{key}',
      operationId: 'resetMySetting',
      summary: 'Remove your override of a setting',
      tags: SETTINGS,
      request: { params: SettingKeyParams },
      problemCodes: SETTING_CODES,
      responses: { 204: { description: 'The organization’s value applies again' }, ...keyRules },
      handler: async (route) => {
        await settings.resetMine(callerOf(route.principal), route.params.key, auditRequestOf(route));
        return noContent();
      },
    }),
    defineRoute({
      method: 'PUT',
      path: '/v1/configuration/settings/{key}',
      operationId: 'setOrganizationSetting',
      summary: 'Set one of your organization’s settings',
      description:
        'The value must have the definition’s type (`custom.*` values are strings); a wrong type is 400 `Validation.Failed` keyed `value`. Publishes `SettingChangedEvent`.',
      tags: SETTINGS,
      permissions: ['ConfigurationManage'],
      request: { params: SettingKeyParams, body: SettingValueInput },
      problemCodes: SETTING_CODES,
      responses: { 200: { description: 'The setting', schema: ResolvedSettingResponse }, ...keyRules },
      handler: async (route) =>
        json(
          await settings.setOrganization(callerOf(route.principal), route.params.key, route.body.value, auditRequestOf(route)),
        ),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/configuration/settings/{key}',
      operationId: 'resetOrganizationSetting',
      summary: 'Revert one of your organization’s settings to its default',
      description: 'A `custom.*` key is removed. Idempotent.',
      tags: SETTINGS,
      permissions: ['ConfigurationManage'],
      request: { params: SettingKeyParams },
      problemCodes: SETTING_CODES,
      responses: { 204: { description: 'The default applies again' }, ...keyRules },
      handler: async (route) => {
        await settings.resetOrganization(callerOf(route.principal), route.params.key, auditRequestOf(route));
        return noContent();
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/configuration/config',
      operationId: 'getConfiguration',
      summary: 'Your settings and feature flags, merged',
      description:
        'Settings merged user > organization > default (`system.*`: platform value > default), and every flag evaluated for you.',
      tags: SETTINGS,
      tenant: 'optional',
      responses: { 200: { description: 'The configuration', schema: ConfigResponse } },
      handler: async ({ principal }) => {
        const actor = callerOf(principal);
        const [merged, values] = await Promise.all([
          settings.resolve(actor.organizationId, actor.userId),
          flags.evaluate({ organizationId: actor.organizationId, userId: actor.userId }),
        ]);
        return json({ settings: merged, flags: values });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/platform/settings',
      operationId: 'listSystemSettings',
      summary: 'The platform-wide system.* settings',
      description: 'Platform administrators only (`SystemSettings` in the platform organization).',
      tags: SETTINGS,
      permissions: ['SystemSettings'],
      responses: { 200: { description: 'The settings', schema: z.array(ResolvedSettingResponse) } },
      handler: async ({ principal }) => json(await settings.listSystem(callerOf(principal))),
    }),
    defineRoute({
      method: 'PUT',
      path: '/v1/platform/settings/{key}',
      operationId: 'setSystemSetting',
      summary: 'Set a platform-wide system.* setting',
      description: 'Platform administrators only. Other keys are 422 `Settings.UnknownKey`. Publishes `SettingChangedEvent`.',
      tags: SETTINGS,
      permissions: ['SystemSettings'],
      request: { params: SettingKeyParams, body: SettingValueInput },
      problemCodes: ['Settings.UnknownKey'],
      responses: {
        200: { description: 'The setting', schema: ResolvedSettingResponse },
        422: { description: 'Not a defined system.* key (`Settings.UnknownKey`)' },
      },
      handler: async (route) =>
        json(await settings.setSystem(callerOf(route.principal), route.params.key, route.body.value, auditRequestOf(route))),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/platform/settings/{key}',
      operationId: 'resetSystemSetting',
      summary: 'Revert a system.* setting to its default',
      tags: SETTINGS,
      permissions: ['SystemSettings'],
      request: { params: SettingKeyParams },
      problemCodes: ['Settings.UnknownKey'],
      responses: { 204: { description: 'The default applies again' } },
      handler: async (route) => {
        await settings.resetSystem(callerOf(route.principal), route.params.key, auditRequestOf(route));
        return noContent();
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/platform/flags',
      operationId: 'listFeatureFlags',
      summary: 'Every feature flag',
      description: 'Platform administrators only.',
      tags: FLAGS,
      permissions: ['SystemSettings'],
      responses: { 200: { description: 'The flags', schema: z.array(FlagResponse) } },
      handler: async ({ principal }) => json(await flags.list(callerOf(principal))),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/platform/flags',
      operationId: 'createFeatureFlag',
      summary: 'Define a feature flag',
      description: 'Platform administrators only. Publishes `FeatureFlagChangedEvent`.',
      tags: FLAGS,
      permissions: ['SystemSettings'],
      request: { body: FlagCreateInput },
      problemCodes: ['FeatureFlags.KeyExists'],
      responses: {
        201: { description: 'The flag', schema: FlagResponse, headers: { Location: '`/v1/platform/flags/{key}`' } },
        409: { description: 'The key is taken (`FeatureFlags.KeyExists`)' },
      },
      handler: async (route) => {
        const created = await flags.create(callerOf(route.principal), route.body, auditRequestOf(route));
        return json(created, {
          status: 201,
          headers: { location: `${route.prefix}/v1/platform/flags/${encodeURIComponent(created.key)}` },
        });
      },
    }),
    defineRoute({
      method: 'PUT',
      path: '/v1/platform/flags/{key}',
      operationId: 'updateFeatureFlag',
      summary: 'Replace a feature flag’s definition',
      description: 'Platform administrators only; the body is the definition without `key`.',
      tags: FLAGS,
      permissions: ['SystemSettings'],
      request: { params: FlagKeyParams, body: FlagUpdateInput },
      problemCodes: ['FeatureFlags.NotFound'],
      responses: { 200: { description: 'The flag', schema: FlagResponse }, 404: flagNotFound },
      handler: async (route) =>
        json(await flags.update(callerOf(route.principal), route.params.key, route.body, auditRequestOf(route))),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/platform/flags/{key}',
      operationId: 'deleteFeatureFlag',
      summary: 'Delete a feature flag and every override of it',
      tags: FLAGS,
      permissions: ['SystemSettings'],
      request: { params: FlagKeyParams },
      problemCodes: ['FeatureFlags.NotFound'],
      responses: { 204: { description: 'Deleted' }, 404: flagNotFound },
      handler: async (route) => {
        await flags.remove(callerOf(route.principal), route.params.key, auditRequestOf(route));
        return noContent();
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/configuration/flags',
      operationId: 'listOrganizationFlags',
      summary: 'Every feature flag with your organization’s overrides',
      tags: FLAGS,
      permissions: ['ConfigurationRead'],
      responses: { 200: { description: 'The flags', schema: z.array(OrganizationFlagResponse) } },
      handler: async ({ principal }) => json(await flags.listForOrganization(callerOf(principal))),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/configuration/flags/evaluate',
      operationId: 'evaluateFeatureFlags',
      summary: 'Every feature flag evaluated for you',
      description:
        'Percentage and variant flags bucket by SHA-256 of `flagKey:userId`: the same answer on every instance and after restarts.',
      tags: FLAGS,
      tenant: 'optional',
      responses: { 200: { description: '`{key: boolean | variant}`', schema: FlagValues } },
      handler: async ({ principal }) => {
        const actor = callerOf(principal);
        return json(await flags.evaluate({ organizationId: actor.organizationId, userId: actor.userId }));
      },
    }),
    defineRoute({
      method: 'PUT',
      path: '/v1/configuration/flags/{key}/override',
      operationId: 'setFeatureFlagOverride',
      summary: 'Override a flag for your organization or one member',
      description:
        '`userId` names a member of your organization; `expiresAt` ends the override. Publishes `FeatureFlagChangedEvent`.',
      tags: FLAGS,
      permissions: ['ConfigurationManage'],
      request: { params: FlagKeyParams, body: FlagOverrideInput },
      problemCodes: ['FeatureFlags.NotFound'],
      responses: { 200: { description: 'The override', schema: FlagOverrideResponse }, 404: flagNotFound },
      handler: async (route) =>
        json(await flags.putOverride(callerOf(route.principal), route.params.key, route.body, auditRequestOf(route))),
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/configuration/flags/{key}/override',
      operationId: 'removeFeatureFlagOverride',
      summary: 'Remove your organization’s (or a member’s, `?userId=`) override of a flag',
      tags: FLAGS,
      permissions: ['ConfigurationManage'],
      request: { params: FlagKeyParams, query: FlagOverrideQuery },
      problemCodes: ['FeatureFlags.NotFound'],
      responses: { 204: { description: 'Removed (idempotent)' }, 404: flagNotFound },
      handler: async (route) => {
        await flags.removeOverride(callerOf(route.principal), route.params.key, route.query.userId, auditRequestOf(route));
        return noContent();
      },
    }),
  ];
}
