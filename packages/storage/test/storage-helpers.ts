import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { TestHost } from '@idt/testing';

/** One part of a hand-built multipart body. */
export type Part =
  | { readonly name: string; readonly value: string }
  | {
      readonly name: string;
      readonly fileName: string;
      readonly contentType?: string;
      readonly content: Uint8Array | (() => AsyncIterable<Uint8Array>);
    };

/** A multipart/form-data body streamed from its parts (no Content-Length: chunked). */
export function multipart(parts: readonly Part[], boundary = `----idt${Math.random().toString(16).slice(2)}`) {
  async function* body(): AsyncGenerator<Uint8Array> {
    for (const part of parts) {
      if ('value' in part) {
        yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"\r\n\r\n${part.value}\r\n`);
      } else {
        yield Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"; filename="${part.fileName}"\r\nContent-Type: ${part.contentType ?? 'application/octet-stream'}\r\n\r\n`,
        );
        if (typeof part.content === 'function') yield* part.content();
        else yield part.content;
        yield Buffer.from('\r\n');
      }
    }
    yield Buffer.from(`--${boundary}--\r\n`);
  }
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** Sends a hand-built multipart body as a stream. */
export function sendMultipart(
  server: TestHost,
  token: string | undefined,
  parts: readonly Part[],
  headers: Record<string, string> = {},
  signal?: AbortSignal,
) {
  const { body, contentType } = multipart(parts);
  const iterator = body();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
  });
  return server.fetch('/v1/storage/upload', {
    method: 'POST',
    headers: { 'content-type': contentType, ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
    body: stream,
    duplex: 'half',
    ...(signal ? { signal } : {}),
  } as RequestInit);
}

/** Uploads with the platform's FormData (Content-Length known). */
export function uploadForm(
  server: TestHost,
  token: string | undefined,
  file: { content: Uint8Array | string; fileName: string; type?: string } | undefined,
  fields: Record<string, string> = { bucket: 'documents' },
) {
  const form = new FormData();
  if (file) form.append('file', new Blob([file.content], { type: file.type ?? 'application/octet-stream' }), file.fileName);
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  return server.fetch('/v1/storage/upload', {
    method: 'POST',
    headers: token ? { authorization: `Bearer ${token}` } : {},
    body: form,
  });
}

/**
 * `size` deterministic pseudo-random bytes, generated lazily from 16 blocks
 * of `chunk` bytes built once and sent in rotation: the client allocates
 * nothing per chunk, so memory measurements see the server's usage.
 */
export function pattern(size: number, chunk = 64 * 1024, seed = 7): () => AsyncIterable<Uint8Array> {
  const blocks = Array.from({ length: 16 }, (_, b) => {
    const block = Buffer.alloc(chunk);
    let state = seed + b;
    for (let i = 0; i < chunk; i++) {
      state = (state * 1103515245 + 12345) & 0x7fffffff;
      block[i] = state >>> 16;
    }
    return block;
  });
  return async function* () {
    let sent = 0;
    for (let round = 0; sent < size; round++) {
      const length = Math.min(chunk, size - sent);
      sent += length;
      yield (blocks[round % blocks.length] as Buffer).subarray(0, length);
    }
  };
}

/** SHA-256 of an async iterable of bytes. */
export async function sha256Of(source: AsyncIterable<Uint8Array>): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of source) hash.update(chunk);
  return hash.digest('hex');
}

/** Every file below a directory, as relative paths (none when it does not exist). */
export function filesBelow(directory: string): string[] {
  if (!existsSync(directory)) return [];
  const out: string[] = [];
  const walk = (dir: string, prefix: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path, `${prefix}${name}/`);
      else out.push(`${prefix}${name}`);
    }
  };
  walk(directory, '');
  return out.sort();
}

/** The storage directory of a test server. */
export function storageDirectory(server: TestHost): string {
  return server.idt.services.storage.settings.directory;
}

/** A 1×1 transparent PNG. */
export const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
);

/** The EICAR anti-virus test string. */
export const EICAR = 'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*';
