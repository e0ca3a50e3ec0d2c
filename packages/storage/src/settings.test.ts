import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_UPLOAD_BYTES, resolveStorageSettings } from './settings.js';

const config = { dataDir: './data' };

describe('storage settings', () => {
  it('default to the filesystem driver under the data directory', () => {
    expect(resolveStorageSettings({}, config)).toEqual({
      driver: 'filesystem',
      directory: './data/files',
      maxUploadBytes: DEFAULT_MAX_UPLOAD_BYTES,
    });
  });

  it('need the bucket and keys for the s3 driver, reporting all of them', () => {
    expect(() => resolveStorageSettings({ IDT_STORAGE_DRIVER: 's3' }, config)).toThrow(
      /IDT_S3_BUCKET[\s\S]*IDT_S3_ACCESS_KEY_ID[\s\S]*IDT_S3_SECRET_ACCESS_KEY/,
    );
    const s3 = resolveStorageSettings(
      {
        IDT_STORAGE_DRIVER: 's3',
        IDT_S3_BUCKET: 'b',
        IDT_S3_ACCESS_KEY_ID: 'k',
        IDT_S3_SECRET_ACCESS_KEY: 's',
        IDT_S3_REGION: 'eu-west-1',
      },
      config,
    );
    expect(s3.s3).toMatchObject({ endpoint: 'https://s3.eu-west-1.amazonaws.com', bucket: 'b', forcePathStyle: true });
  });

  it('refuse an unknown driver, a bad size and a bad ClamAV URL', () => {
    expect(() =>
      resolveStorageSettings(
        { IDT_STORAGE_DRIVER: 'ftp', IDT_STORAGE_MAX_UPLOAD_BYTES: 'lots', IDT_CLAMAV_URL: 'http://x' },
        config,
      ),
    ).toThrow(/IDT_STORAGE_DRIVER[\s\S]*IDT_STORAGE_MAX_UPLOAD_BYTES[\s\S]*IDT_CLAMAV_URL/);
  });

  it('take options over the environment', () => {
    expect(resolveStorageSettings({ IDT_STORAGE_DIR: '/env' }, config, { directory: '/option' }).directory).toBe('/option');
  });
});
