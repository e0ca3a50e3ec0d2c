import { z } from 'zod';

/** Who can act in the audit trail: a signed-in user, a service account, an API key, a SCIM client, an operator at the CLI, or idt itself. */
export const AUDIT_ACTOR_TYPES = ['user', 'service', 'apiKey', 'scim', 'operator', 'system'] as const;

/** The kind of an {@link AuditActor}. */
export type AuditActorType = (typeof AUDIT_ACTOR_TYPES)[number];

/** The outcomes of an audited action. */
export const AUDIT_OUTCOMES = ['success', 'failure'] as const;

/** Whether the audited action happened (`success`) or was refused (`failure`, e.g. a failed sign-in). */
export type AuditOutcome = (typeof AUDIT_OUTCOMES)[number];

/** Who performed an audited action. */
export interface AuditActor {
  readonly type: AuditActorType;
  /** The user, client, API key or SCIM token id; `null` for `system` and an unnamed operator. */
  readonly id: string | null;
  /** A name for people reading the trail (an e-mail address, a client name), as it was at the time. */
  readonly display: string | null;
}

/** What an audited action was done to. */
export interface AuditTarget {
  /** `user`, `organization`, `client`, `apiKey`, `session`, … */
  readonly type: string;
  readonly id: string | null;
  readonly display: string | null;
}

/** A JSON value of audit metadata. */
export type AuditMetadataValue =
  | string
  | number
  | boolean
  | null
  | readonly AuditMetadataValue[]
  | { readonly [key: string]: AuditMetadataValue };

/** Free-form facts about an audited action; never a secret (see {@link assertNoSecrets}). */
export type AuditMetadata = { readonly [key: string]: AuditMetadataValue };

/** One audited action as a module records it. `occurredAt` comes from the injected clock. */
export interface AuditEntry {
  /** A registered dotted name: `identity.password.reset`. */
  readonly action: string;
  /** The organization whose trail records it; `null` for the platform trail (personal and platform actions). */
  readonly organizationId: string | null;
  readonly actor: AuditActor;
  readonly target?: AuditTarget | null;
  /** `success` by default. */
  readonly outcome?: AuditOutcome;
  /** The client address of the request, when there was one. */
  readonly ip?: string | null;
  /** The `user-agent` of the request (cut to 512 characters). */
  readonly userAgent?: string | null;
  /** The W3C trace id of the request. */
  readonly traceId?: string | null;
  readonly metadata?: AuditMetadata;
}

/** A stored audit record: the entry, its place in its organization's chain and its hashes. */
export interface AuditRecord {
  readonly id: string;
  /** The position in its chain, from 1, without gaps. */
  readonly sequence: number;
  /** ISO 8601 UTC, milliseconds. */
  readonly occurredAt: string;
  readonly organizationId: string | null;
  readonly actor: AuditActor;
  readonly action: string;
  readonly target: AuditTarget | null;
  readonly outcome: AuditOutcome;
  readonly ip: string | null;
  readonly userAgent: string | null;
  readonly traceId: string | null;
  readonly metadata: AuditMetadata;
  /** The hash of the previous record of the chain (64 zeros for the first). */
  readonly prevHash: string;
  /** SHA-256 (hex) over this record's canonical form and `prevHash`. */
  readonly hash: string;
}

/** A dotted, lowercase action name of at least two parts: `identity.password.reset`. */
export const AUDIT_ACTION_PATTERN = /^[a-z][a-zA-Z0-9_]*(\.[a-z][a-zA-Z0-9_]*)+$/;

const MAX_DISPLAY = 200;
const MAX_USER_AGENT = 512;
const MAX_METADATA_BYTES = 16_384;

const cut = (max: number) =>
  z
    .string()
    .nullish()
    .transform((value) => (value == null || value === '' ? null : value.slice(0, max)));

/** The stored form of an entry's parts; displays and user agents are cut, not refused (a long name must not fail the change). */
export const AuditEntrySchema = z.object({
  action: z.string().max(200).regex(AUDIT_ACTION_PATTERN, 'An audit action is a dotted lowercase name: area.thing.verb'),
  organizationId: z
    .string()
    .min(1)
    .max(36)
    // `platform` names the platform chain (organization `null`): no organization may take it.
    .refine((value) => value.toLowerCase() !== 'platform', 'Record platform actions with organizationId null')
    .nullable(),
  actor: z.object({
    type: z.enum(AUDIT_ACTOR_TYPES),
    id: z.string().max(200).nullable(),
    display: cut(MAX_DISPLAY),
  }),
  target: z
    .object({ type: z.string().min(1).max(64), id: z.string().max(200).nullable(), display: cut(MAX_DISPLAY) })
    .nullish()
    .transform((value) => value ?? null),
  outcome: z.enum(AUDIT_OUTCOMES).default('success'),
  ip: z
    .string()
    .max(64)
    .nullish()
    .transform((value) => value ?? null),
  userAgent: cut(MAX_USER_AGENT),
  traceId: z
    .string()
    .max(64)
    .nullish()
    .transform((value) => value ?? null),
  metadata: z.record(z.string(), z.unknown()).default({}),
});

/** An entry after validation: every optional part present (`null` or its default). */
export type NormalizedAuditEntry = Omit<z.output<typeof AuditEntrySchema>, 'metadata'> & { readonly metadata: AuditMetadata };

/** Thrown when an entry cannot be recorded: an unknown action, a malformed part, or metadata that looks secret. */
export class AuditEntryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuditEntryError';
  }
}

/** Words that make a metadata key look like it holds a secret. */
const SECRET_WORDS = new Set([
  'password',
  'passwd',
  'passphrase',
  'secret',
  'secrets',
  'token',
  'tokens',
  'code',
  'codes',
  'key',
  'keys',
  'hash',
  'otp',
  'totp',
  'pin',
  'credential',
  'credentials',
  'cookie',
  'authorization',
  'jwt',
  'salt',
  'signature',
  'private',
  'recovery',
]);

/** A key's last word that names something about the secret rather than the secret (`apiKeyId`, `tokenCount`). */
const HARMLESS_LAST_WORDS = new Set(['id', 'ids', 'name', 'names', 'count', 'type', 'kind', 'at', 'length', 'status']);

/** The words of a key: `apiKeyId` → api, key, id; `reset_token` → reset, token. */
function wordsOf(key: string): string[] {
  return key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^a-zA-Z0-9]+/)
    .filter(Boolean)
    .map((word) => word.toLowerCase());
}

/** Whether a metadata key looks like it names a secret. */
export function isSecretLookingKey(key: string): boolean {
  const words = wordsOf(key);
  const last = words.at(-1);
  if (last !== undefined && HARMLESS_LAST_WORDS.has(last)) return false;
  return words.some((word) => SECRET_WORDS.has(word));
}

/** A compact JWT (`eyJ…​.…​.…`) or a PEM block: values that are secrets whatever their key. */
const SECRET_VALUE = /^eyJ[\w-]+\.[\w-]+\.[\w-]*$|-----BEGIN [A-Z ]*PRIVATE KEY-----/;

/**
 * Refuses metadata that looks like it carries a secret: a key such as
 * `password`, `clientSecret`, `resetToken`, `code`, `apiKey` or `hash` (at
 * any depth; `apiKeyId` and `tokenCount` pass), or a value that is a JWT or a
 * private key. The trail is read by customers and exported: a secret must never reach it.
 *
 * @throws AuditEntryError naming the path of the offending key or value.
 */
export function assertNoSecrets(metadata: unknown, path = 'metadata'): void {
  if (typeof metadata === 'string') {
    if (SECRET_VALUE.test(metadata))
      throw new AuditEntryError(`${path} looks like a token or a private key; audit metadata never holds secrets`);
    return;
  }
  if (Array.isArray(metadata)) {
    for (const [index, value] of metadata.entries()) assertNoSecrets(value, `${path}[${index}]`);
    return;
  }
  if (metadata !== null && typeof metadata === 'object') {
    for (const [key, value] of Object.entries(metadata)) {
      if (isSecretLookingKey(key)) {
        throw new AuditEntryError(
          `${path}.${key} looks like a secret; audit metadata never holds secrets (name it differently if it is not one)`,
        );
      }
      assertNoSecrets(value, `${path}.${key}`);
    }
  }
}

/** Whether a value is plain JSON (no functions, dates, class instances, non-finite numbers or undefined). */
function checkJson(value: unknown, path: string): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new AuditEntryError(`${path} is not a finite number`);
    return;
  }
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) checkJson(item, `${path}[${index}]`);
    return;
  }
  if (typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    for (const [key, item] of Object.entries(value)) checkJson(item, `${path}.${key}`);
    return;
  }
  throw new AuditEntryError(`${path} is not a JSON value (strings, numbers, booleans, null, arrays and plain objects only)`);
}

/**
 * Validates and normalizes an entry: the action's form, the parts' lengths,
 * plain JSON metadata of at most 16 KiB without secrets.
 *
 * @throws AuditEntryError naming what is wrong.
 */
export function normalizeAuditEntry(entry: AuditEntry): NormalizedAuditEntry {
  const parsed = AuditEntrySchema.safeParse(entry);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AuditEntryError(`Audit entry ${String(entry?.action)}: ${issue?.path.join('.') || 'entry'}: ${issue?.message}`);
  }
  checkJson(parsed.data.metadata, 'metadata');
  assertNoSecrets(parsed.data.metadata);
  if (Buffer.byteLength(JSON.stringify(parsed.data.metadata)) > MAX_METADATA_BYTES) {
    throw new AuditEntryError(`Audit entry ${entry.action}: metadata is larger than ${MAX_METADATA_BYTES} bytes`);
  }
  return {
    ...parsed.data,
    organizationId: parsed.data.organizationId?.toLowerCase() ?? null,
    metadata: parsed.data.metadata as AuditMetadata,
  };
}
