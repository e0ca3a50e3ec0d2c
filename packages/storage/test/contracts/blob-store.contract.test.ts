import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { type BlobStore, createFileSystemBlobStore, createS3BlobStore, STAGING_FOLDER } from '@idt/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3_STUB_ACCOUNT, type S3Stub, startS3Stub } from './s3-stub.js';

/** A blob store under test and the local folder its uploads are staged in before they are committed. */
interface StoreUnderTest {
  readonly store: BlobStore;
  readonly stagingFolder: string;
}

/** One implementation of {@link BlobStore}: what it needs started once, and how a store is made over a scratch folder. */
interface Implementation {
  readonly name: string;
  start(): Promise<{ create(directory: string): StoreUnderTest; stop(): Promise<void> }>;
}

const s3 =
  (prefix?: string): Implementation['start'] =>
  async () => {
    const stub: S3Stub = await startS3Stub();
    return {
      create: (directory) => {
        const spoolDirectory = join(directory, 'spool');
        const store = createS3BlobStore({
          endpoint: stub.endpoint,
          ...S3_STUB_ACCOUNT,
          spoolDirectory,
          ...(prefix ? { prefix } : {}),
        });
        return { store, stagingFolder: spoolDirectory };
      },
      stop: () => stub.close(),
    };
  };

const implementations: Implementation[] = [
  {
    name: 'filesystem',
    start: async () => ({
      create: (directory) => ({
        store: createFileSystemBlobStore({ directory }),
        stagingFolder: join(directory, STAGING_FOLDER),
      }),
      stop: async () => undefined,
    }),
  },
  { name: 's3 (path-style, in-test stub server)', start: s3() },
  { name: 's3 with a key prefix', start: s3('idt/') },
];

/** A readable of `chunks`, as an upload arrives. */
const source = (...chunks: Array<string | Buffer>) => Readable.from(chunks.map((chunk) => Buffer.from(chunk)));

/** All the bytes of a readable. */
async function bytesOf(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

const INVALID_KEYS = [
  '',
  '../escape',
  'org/../escape',
  'org/./file',
  '/org/file',
  'org/file/',
  'org//file',
  'file.txt',
  'org/fi le',
  'x'.repeat(513),
];

/**
 * The contract of every {@link BlobStore}, run against each implementation
 * (the filesystem in a temporary folder; S3 against a signature-checking
 * stub on a loopback port, with and without a key prefix): bytes are staged,
 * then committed under a key or discarded, and nothing of a failed or
 * discarded upload is left behind; keys that could leave the store are
 * refused; staged leftovers are swept by age.
 */
describe.each(implementations)('the blob store contract on $name', (implementation) => {
  let started: Awaited<ReturnType<Implementation['start']>> | undefined;
  let root = '';
  let current: StoreUnderTest | undefined;
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'idt-blob-contract-'));
    started = await implementation.start();
    current = started.create(join(root, 'store'));
  });
  afterAll(async () => {
    await started?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });
  const world = () => {
    if (!current) throw new Error('The store is made in beforeAll');
    return current;
  };
  const blobs = () => world().store;
  /** The names in the staging folder (none when it does not exist). */
  const leftovers = async () => readdir(world().stagingFolder).catch(() => [] as string[]);
  let sequence = 0;
  /** A key no other test uses. */
  const newKey = (folder = 'org') => `${folder}/file-${++sequence}`;
  const committed = async (key: string, ...chunks: Array<string | Buffer>) => {
    const staged = await blobs().stage(source(...chunks));
    await staged.commit(key, { contentType: 'application/octet-stream' });
  };
  const read = async (key: string) => {
    const opened = await blobs().open(key);
    return opened && { sizeBytes: opened.sizeBytes, bytes: await bytesOf(opened.body) };
  };

  it('names its kind', () => {
    expect(blobs().kind).toMatch(/^[a-z0-9-]+$/);
  });

  describe('stage and commit', () => {
    it('stages the bytes (readable again before the commit, invisible under the key), then commits them under the key', async () => {
      const key = newKey();
      const staged = await blobs().stage(source('hello, ', 'world'));
      expect(staged.sizeBytes).toBe(12);
      expect((await bytesOf(staged.read())).toString()).toBe('hello, world');
      expect((await bytesOf(staged.read())).toString()).toBe('hello, world');
      expect(await blobs().open(key)).toBeUndefined();

      await staged.commit(key, { contentType: 'text/plain' });
      expect(await read(key)).toEqual({ sizeBytes: 12, bytes: Buffer.from('hello, world') });
      expect(await leftovers()).toEqual([]);
    });

    it('streams a body of many chunks, and stores an empty one', async () => {
      const big = randomBytes(1024 * 1024 + 17);
      const chunks = Array.from({ length: Math.ceil(big.length / 65_536) }, (_, index) =>
        big.subarray(index * 65_536, (index + 1) * 65_536),
      );
      const [bigKey, emptyKey] = [newKey(), newKey()];
      const staged = await blobs().stage(Readable.from(chunks));
      expect(staged.sizeBytes).toBe(big.length);
      await staged.commit(bigKey, { contentType: 'application/octet-stream' });
      await committed(emptyKey);

      const whole = await read(bigKey);
      expect(whole?.sizeBytes).toBe(big.length);
      // Buffer#equals: a deep equality of a megabyte byte by byte takes seconds.
      expect(whole?.bytes.equals(big)).toBe(true);
      expect(await read(emptyKey)).toEqual({ sizeBytes: 0, bytes: Buffer.alloc(0) });
      expect(await leftovers()).toEqual([]);
    });

    it('keeps blobs under distinct keys apart, whatever their folders', async () => {
      const [one, sibling, nested, otherFolder] = [newKey('org-a'), newKey('org-a'), newKey('org-a/sub'), newKey('org-b')];
      await committed(one, 'one');
      await committed(sibling, 'sibling');
      await committed(nested, 'nested');
      await committed(otherFolder, 'other folder');
      expect((await read(one))?.bytes.toString()).toBe('one');
      expect((await read(sibling))?.bytes.toString()).toBe('sibling');
      expect((await read(nested))?.bytes.toString()).toBe('nested');
      expect((await read(otherFolder))?.bytes.toString()).toBe('other folder');
      expect(await blobs().open(`${one}-missing`)).toBeUndefined();
    });

    it('commits a staged blob once: a second commit is refused, and a discard afterwards does nothing', async () => {
      const [key, again] = [newKey(), newKey()];
      const staged = await blobs().stage(source('once'));
      await staged.commit(key, { contentType: 'text/plain' });
      await expect(staged.commit(again, { contentType: 'text/plain' })).rejects.toThrow();
      await staged.discard();
      expect((await read(key))?.bytes.toString()).toBe('once');
      expect(await blobs().open(again)).toBeUndefined();
      expect(await leftovers()).toEqual([]);
    });
  });

  describe('discard and failed uploads', () => {
    it('discards staged bytes: nothing is committed or left behind, a second discard does nothing, and a commit is refused', async () => {
      const key = newKey();
      const staged = await blobs().stage(source('unwanted'));
      expect(await leftovers()).toHaveLength(1);
      await staged.discard();
      await staged.discard();
      expect(await leftovers()).toEqual([]);
      await expect(staged.commit(key, { contentType: 'text/plain' })).rejects.toThrow();
      expect(await blobs().open(key)).toBeUndefined();
    });

    it("rejects with the source's own error when the source fails midway, and leaves nothing behind", async () => {
      const failure = new Error('client gone');
      const failing = Readable.from(
        (async function* () {
          yield Buffer.from('partial ');
          yield Buffer.from('upload');
          throw failure;
        })(),
      );
      await expect(blobs().stage(failing)).rejects.toBe(failure);
      expect(await leftovers()).toEqual([]);
    });
  });

  describe('open and delete', () => {
    it('opens a missing key as undefined, and deletes a missing key without an error', async () => {
      const key = newKey();
      expect(await blobs().open(key)).toBeUndefined();
      await expect(blobs().delete(key)).resolves.toBeUndefined();
    });

    it('deletes a committed blob and leaves the others', async () => {
      const [gone, kept] = [newKey(), newKey()];
      await committed(gone, 'gone');
      await committed(kept, 'kept');
      await blobs().delete(gone);
      expect(await blobs().open(gone)).toBeUndefined();
      expect((await read(kept))?.bytes.toString()).toBe('kept');
      await blobs().delete(gone);
    });

    it('lets a reader stop early, and opens the blob whole again afterwards', async () => {
      const key = newKey();
      const content = randomBytes(256 * 1024);
      await committed(key, content);
      const opened = await blobs().open(key);
      expect(opened?.sizeBytes).toBe(content.length);
      opened?.body.destroy();
      const again = await read(key);
      expect(again?.sizeBytes).toBe(content.length);
      expect(again?.bytes.equals(content)).toBe(true);
    });
  });

  describe('keys', () => {
    it.each(
      INVALID_KEYS.map((key) => [key.length > 40 ? `${key.slice(0, 8)}… (${key.length} characters)` : JSON.stringify(key), key]),
    )('refuses the key %s with a TypeError on commit, open and delete', async (_name, key) => {
      const staged = await blobs().stage(source('never stored'));
      await expect(staged.commit(key, { contentType: 'text/plain' })).rejects.toThrow(TypeError);
      await expect(blobs().open(key)).rejects.toThrow(TypeError);
      await expect(blobs().delete(key)).rejects.toThrow(TypeError);
      await staged.discard();
      expect(await leftovers()).toEqual([]);
    });

    it('takes the longest valid key (512 characters)', async () => {
      // Segments of at most 255 characters: the longest file name most file systems take.
      const key = `${'a'.repeat(200)}/${'b'.repeat(200)}/${'c'.repeat(110)}`;
      await committed(key, 'long');
      expect((await read(key))?.bytes.toString()).toBe('long');
      await blobs().delete(key);
      expect(await blobs().open(key)).toBeUndefined();
    });
  });

  describe('sweep', () => {
    it('deletes staged leftovers older than the given age only, and answers how many', async () => {
      expect(await leftovers()).toEqual([]);
      const abandoned = await blobs().stage(source('abandoned by a crash'));
      const [name] = await leftovers();
      const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
      await utimes(join(world().stagingFolder, name ?? ''), twoHoursAgo, twoHoursAgo);
      const recent = await blobs().stage(source('still uploading'));

      expect(await blobs().sweep(3 * 3_600_000)).toBe(0);
      expect(await blobs().sweep(3_600_000)).toBe(1);
      expect(await leftovers()).toHaveLength(1);
      // The recent upload is untouched and still commits.
      const key = newKey();
      await recent.commit(key, { contentType: 'text/plain' });
      expect((await read(key))?.bytes.toString()).toBe('still uploading');
      // Discarding what was swept is no error.
      await abandoned.discard();
      expect(await leftovers()).toEqual([]);
      expect(await blobs().sweep(0)).toBe(0);
    });

    it('sweeps nothing before anything was staged', async () => {
      if (!started) throw new Error('The implementation is started in beforeAll');
      const { store, stagingFolder } = started.create(join(root, 'untouched'));
      await expect(readdir(stagingFolder)).rejects.toThrow();
      expect(await store.sweep(0)).toBe(0);
    });
  });
});
