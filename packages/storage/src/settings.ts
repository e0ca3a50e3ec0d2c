import type { EnvironmentVariable, IdtConfig } from '@idt/core';
import { type Env, envReader } from '@idt/core';

/** The S3-compatible object store of the `s3` storage driver. */
export interface S3Settings {
  /** `IDT_S3_ENDPOINT`: e.g. `https://s3.eu-central-1.amazonaws.com` or `http://127.0.0.1:9000` (MinIO). */
  endpoint: string;
  /** `IDT_S3_REGION` (default `us-east-1`). */
  region: string;
  /** `IDT_S3_BUCKET`: the one bucket every object goes to. */
  bucket: string;
  /** `IDT_S3_ACCESS_KEY_ID`. */
  accessKeyId: string;
  /** `IDT_S3_SECRET_ACCESS_KEY`. */
  secretAccessKey: string;
  /** `IDT_S3_FORCE_PATH_STYLE`: `endpoint/bucket/key` instead of `bucket.endpoint/key` (default true). */
  forcePathStyle: boolean;
}

/** Where uploaded files are kept and how they are checked. */
export interface StorageSettings {
  /** `IDT_STORAGE_DRIVER`: `filesystem` (default) or `s3`. */
  driver: 'filesystem' | 's3';
  /** `IDT_STORAGE_DIR`: the filesystem driver's directory (default `${dataDir}/files`). */
  directory: string;
  /** `IDT_STORAGE_MAX_UPLOAD_BYTES`: the largest upload request (default 104,857,600). */
  maxUploadBytes: number;
  /** The `s3` driver's settings (present when the driver is `s3`). */
  s3?: S3Settings;
  /** `IDT_CLAMAV_URL`: `tcp://host:3310` of a clamd to scan uploads with; scanning is off without it. */
  clamavUrl?: string;
}

/** The default largest upload request: 100 MiB (SPEC 8.2). */
export const DEFAULT_MAX_UPLOAD_BYTES = 104_857_600;

/** The environment variables of the storage module. */
export const storageVariables: readonly EnvironmentVariable[] = [
  { name: 'IDT_STORAGE_DRIVER', description: '`filesystem` or `s3`.', default: 'filesystem' },
  {
    name: 'IDT_STORAGE_DIR',
    description: "The filesystem driver's directory (also the S3 driver's upload spool).",
    default: '<IDT_DATA_DIR>/files',
  },
  {
    name: 'IDT_STORAGE_MAX_UPLOAD_BYTES',
    description: 'The largest upload request, in bytes.',
    default: String(DEFAULT_MAX_UPLOAD_BYTES),
  },
  { name: 'IDT_S3_ENDPOINT', description: 'The S3-compatible endpoint.', default: 'https://s3.<IDT_S3_REGION>.amazonaws.com' },
  { name: 'IDT_S3_REGION', description: 'The S3 region.', default: 'us-east-1' },
  { name: 'IDT_S3_BUCKET', description: 'The bucket (required with the s3 driver).' },
  { name: 'IDT_S3_ACCESS_KEY_ID', description: 'The access key id (required with the s3 driver).' },
  { name: 'IDT_S3_SECRET_ACCESS_KEY', description: 'The secret access key (required with the s3 driver).' },
  { name: 'IDT_S3_FORCE_PATH_STYLE', description: 'Path-style addressing (`endpoint/bucket/key`).', default: 'true' },
  { name: 'IDT_CLAMAV_URL', description: '`tcp://host:3310` of a clamd to scan uploads with; no scanning without it.' },
];

/**
 * Reads the storage settings from the environment; `overrides` win.
 *
 * @throws ConfigError listing every invalid setting.
 */
export function resolveStorageSettings(
  env: Env,
  config: Pick<IdtConfig, 'dataDir'>,
  overrides: Partial<StorageSettings> = {},
): StorageSettings {
  const read = envReader(env);
  const driver = overrides.driver ?? read.oneOf('IDT_STORAGE_DRIVER', ['filesystem', 's3'] as const, 'filesystem');
  const directory = overrides.directory ?? read.string('IDT_STORAGE_DIR') ?? `${config.dataDir.replace(/\/+$/, '')}/files`;
  const maxUploadBytes =
    overrides.maxUploadBytes ?? read.integer('IDT_STORAGE_MAX_UPLOAD_BYTES', { default: DEFAULT_MAX_UPLOAD_BYTES, min: 1 });
  if (!Number.isInteger(maxUploadBytes) || maxUploadBytes < 1) {
    read.problem('IDT_STORAGE_MAX_UPLOAD_BYTES: must be a positive whole number of bytes');
  }
  const clamavUrl = overrides.clamavUrl ?? read.string('IDT_CLAMAV_URL');
  if (clamavUrl !== undefined) {
    let valid = false;
    try {
      const url = new URL(clamavUrl);
      valid = url.protocol === 'tcp:' && url.hostname !== '' && url.port !== '';
    } catch {
      // reported below
    }
    if (!valid) read.problem('IDT_CLAMAV_URL: must be tcp://host:port, e.g. tcp://127.0.0.1:3310');
  }
  let s3: S3Settings | undefined = overrides.s3;
  if (s3 === undefined && driver === 's3') {
    const region = read.string('IDT_S3_REGION') ?? 'us-east-1';
    for (const name of ['IDT_S3_BUCKET', 'IDT_S3_ACCESS_KEY_ID', 'IDT_S3_SECRET_ACCESS_KEY']) {
      if (read.string(name) === undefined) read.problem(`${name}: is required when IDT_STORAGE_DRIVER is s3`);
    }
    s3 = {
      endpoint: read.string('IDT_S3_ENDPOINT') ?? `https://s3.${region}.amazonaws.com`,
      region,
      bucket: read.string('IDT_S3_BUCKET') ?? '',
      accessKeyId: read.string('IDT_S3_ACCESS_KEY_ID') ?? '',
      secretAccessKey: read.string('IDT_S3_SECRET_ACCESS_KEY') ?? '',
      forcePathStyle: read.boolean('IDT_S3_FORCE_PATH_STYLE', true),
    };
  }
  if (s3 !== undefined) {
    try {
      const url = new URL(s3.endpoint);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') read.problem('IDT_S3_ENDPOINT: must be an http or https URL');
    } catch {
      read.problem(`IDT_S3_ENDPOINT: "${s3.endpoint}" is not an absolute URL`);
    }
  }
  read.done();
  return {
    driver,
    directory,
    maxUploadBytes,
    ...(s3 !== undefined ? { s3 } : {}),
    ...(clamavUrl !== undefined ? { clamavUrl } : {}),
  };
}
