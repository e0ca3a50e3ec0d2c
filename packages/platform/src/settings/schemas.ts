import { z } from 'zod';

/** The body of `PUT .../settings/{key}`: `{value}`, typed by the setting's definition. */
export const SettingValueInput = z.object({
  value: z.unknown().describe('A string, number, boolean or JSON value, as the setting’s type says.'),
});

/** A setting as the API answers it. */
export const ResolvedSettingResponse = z.object({
  key: z.string(),
  value: z.unknown(),
  type: z.enum(['string', 'number', 'boolean', 'json']),
  source: z.enum(['user', 'organization', 'platform', 'default']),
  description: z.string().optional(),
  defaultValue: z.unknown().optional(),
});

/** `GET /v1/configuration/config`. */
export const ConfigResponse = z.object({
  settings: z.record(z.string(), z.unknown()),
  flags: z.record(z.string(), z.union([z.boolean(), z.string()])),
});

/** The path of a setting route. */
export const SettingKeyParams = z.object({
  key: z.string().min(1).max(200).describe('`<module>.<name>`, `custom.<name>` or `system.<name>`'),
});
