import { registerProblemCodes } from '@idt/problem';

/** Error codes owned by `@idt/platform`. */
export const PlatformCodes = registerProblemCodes('@idt/platform', {
  'Settings.SystemKeyBlocked': {
    kind: 'BusinessRule',
    description: 'system.* settings are platform-wide: only platform administrators change them, on /v1/platform/settings.',
  },
  'Settings.UnknownKey': {
    kind: 'BusinessRule',
    description: 'No module defines this setting key, and it is not a custom.* key.',
  },
  'Settings.NotOverridable': {
    kind: 'BusinessRule',
    description: 'This setting is decided by the organization; users cannot override it.',
  },
  'Settings.CustomLimitReached': {
    kind: 'BusinessRule',
    description: 'An organization has at most 100 custom.* settings.',
  },
  'FeatureFlags.NotFound': {
    kind: 'NotFound',
    description: 'No feature flag has this key.',
  },
  'FeatureFlags.KeyExists': {
    kind: 'Conflict',
    description: 'A feature flag with this key already exists.',
  },
  'Changelog.NotFound': {
    kind: 'NotFound',
    description: 'No published changelog entry has this version (or id).',
  },
  'Changelog.VersionExists': {
    kind: 'Conflict',
    description: 'A changelog entry with this version already exists.',
  },
  'Announcements.NotFound': {
    kind: 'NotFound',
    description: 'No such announcement in your organization.',
  },
  'Announcements.NotDismissible': {
    kind: 'BusinessRule',
    description: 'This announcement cannot be dismissed.',
  },
  'Webhooks.EndpointNotFound': {
    kind: 'NotFound',
    description: 'No such webhook endpoint.',
  },
  'Webhooks.MessageNotFound': {
    kind: 'NotFound',
    description: 'No such webhook message.',
  },
  'Webhooks.UnknownEventType': {
    kind: 'Validation',
    description: 'One of the event types is not offered; see GET /v1/webhooks/event-types.',
  },
  'Webhooks.PrivateHostRefused': {
    kind: 'BusinessRule',
    description:
      'The URL points to a loopback or private address, which this deployment does not allow, or to a cloud metadata address, which no deployment allows.',
  },
  'Announcements.InvalidStatusTransition': {
    kind: 'BusinessRule',
    description: 'Announcements move Draft → Scheduled → Published → Expired, and any of them to Archived.',
  },
});
