import { z } from 'zod';

/** The notification types (SPEC-NOTES). */
export const NOTIFICATION_TYPES = [
  'InquirySubmitted',
  'InquiryComment',
  'Announcement',
  'SecurityAlert',
  'SystemNotification',
] as const;
/** A notification type. */
export type NotificationType = (typeof NOTIFICATION_TYPES)[number];
/** The delivery channels a member may opt out of. */
export const NOTIFICATION_CHANNELS = ['email', 'inApp'] as const;
/** A delivery channel. */
export type NotificationChannel = (typeof NOTIFICATION_CHANNELS)[number];

/** A notification as the API answers it. */
export const NotificationResponse = z.object({
  id: z.string(),
  userId: z.string(),
  organizationId: z.string().nullable().describe('null for a personal notification (shown in every organization of the user)'),
  type: z.enum(NOTIFICATION_TYPES),
  title: z.string(),
  message: z.string(),
  isRead: z.boolean(),
  readAt: z.string().nullable(),
  actionUrl: z.string().nullable(),
  createdAt: z.string(),
});
/** A notification as the API answers it. */
export type NotificationRecord = z.output<typeof NotificationResponse>;

/** An absolute http(s) URL or a path on this site. */
const ActionUrl = z
  .string()
  .max(2000, 'An action URL has at most 2000 characters.')
  .refine((value) => {
    if (value.startsWith('/') && !value.startsWith('//')) return true;
    try {
      const url = new URL(value);
      return url.protocol === 'https:' || url.protocol === 'http:';
    } catch {
      return false;
    }
  }, 'Enter an absolute http(s) URL or a path starting with /.');

/** The body of `POST /v1/notifications`. */
export const CreateNotificationInput = z.object({
  userId: z.string().min(1, 'Name the recipient.').max(36),
  type: z.enum(NOTIFICATION_TYPES, { error: `Use one of ${NOTIFICATION_TYPES.join(', ')}.` }),
  title: z.string().trim().min(1, 'Enter a title.').max(200, 'A title has at most 200 characters.'),
  message: z.string().trim().min(1, 'Enter a message.').max(2000, 'A message has at most 2000 characters.'),
  actionUrl: ActionUrl.nullish(),
});

/** The body of `PUT /v1/notifications/preferences`. */
export const PreferenceInput = z.object({
  channel: z.enum(NOTIFICATION_CHANNELS, { error: 'Use email or inApp.' }),
  type: z
    .union([z.literal('*'), z.enum(NOTIFICATION_TYPES)], { error: `Use * or one of ${NOTIFICATION_TYPES.join(', ')}.` })
    .optional()
    .describe('A type, or * (the default) for the whole channel'),
  enabled: z.boolean({ error: 'enabled must be true or false.' }),
});

/** The answer of `GET /v1/notifications/preferences`. */
export const PreferencesResponse = z.object({
  channels: z.array(
    z.object({
      channel: z.enum(NOTIFICATION_CHANNELS),
      enabled: z.boolean(),
      types: z.array(z.object({ type: z.enum(NOTIFICATION_TYPES), enabled: z.boolean() })),
    }),
  ),
});
