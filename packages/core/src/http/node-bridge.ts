import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { RequestInfo } from './app.js';
import type { NodeSurfaceHandler } from './node-adapter.js';

/** The largest request body the bridge hands to a node handler (the provider's forms are a few KiB). */
const MAX_BRIDGED_BODY_BYTES = 1024 * 1024;

/**
 * Runs a node:http handler for a Fetch `Request` and answers its response as
 * a Fetch `Response`: the way a Fetch host (Hono, Bun, Deno, a Next.js route)
 * reaches a surface built on node:http, such as the OpenID provider.
 *
 * The handler sees an `IncomingMessage` with the request's method, path,
 * headers and body, on a socket whose peer is `info.remoteAddress` and which
 * counts as encrypted when the URL is `https:`. Its response is buffered.
 * Resolves `undefined` when the handler declines (answers `false`).
 *
 * @example
 * const response = await runNodeHandler(provider.callback(), new Request('http://localhost/.well-known/openid-configuration'));
 */
export async function runNodeHandler(
  handler: NodeSurfaceHandler | ((req: IncomingMessage, res: ServerResponse) => unknown),
  request: Request,
  info: RequestInfo = {},
): Promise<Response | undefined> {
  const url = new URL(request.url);
  const socket = new Socket();
  Object.defineProperty(socket, 'remoteAddress', { value: info.remoteAddress, configurable: true });
  Object.defineProperty(socket, 'encrypted', { value: url.protocol === 'https:', configurable: true });
  const req = new IncomingMessage(socket);
  req.method = request.method;
  req.url = `${url.pathname}${url.search}`;
  req.httpVersionMajor = 1;
  req.httpVersionMinor = 1;
  req.httpVersion = '1.1';
  const headers: Record<string, string | string[]> = {};
  const rawHeaders: string[] = [];
  request.headers.forEach((value, name) => {
    headers[name] = value;
    rawHeaders.push(name, value);
  });
  if (!request.headers.has('host')) {
    headers.host = url.host;
    rawHeaders.push('host', url.host);
  }
  req.headers = headers;
  req.rawHeaders = rawHeaders;

  const body = await readLimited(request.body, MAX_BRIDGED_BODY_BYTES);
  if (body === 'too-large') {
    return new Response('Content Too Large', { status: 413, headers: { 'content-type': 'text/plain', connection: 'close' } });
  }
  if (body.byteLength > 0) {
    if (!('transfer-encoding' in headers)) headers['content-length'] = String(body.byteLength);
    req.push(body);
  }
  req.push(null);
  req.complete = true;

  const capture = new CapturedResponse(req);
  const res = capture.res;
  let taken: unknown;
  try {
    taken = await handler(req, res);
  } catch (error) {
    if (!capture.started) throw error;
    capture.fail(error);
  }
  if (taken === false && !capture.started) return undefined;
  return capture.response();
}

/** The whole body, or `'too-large'` as soon as it passes `limit` bytes (the rest is not read). */
async function readLimited(stream: ReadableStream<Uint8Array> | null, limit: number): Promise<Buffer | 'too-large'> {
  if (!stream) return Buffer.alloc(0);
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => undefined);
      return 'too-large';
    }
    chunks.push(Buffer.from(value.buffer, value.byteOffset, value.byteLength));
  }
  return Buffer.concat(chunks);
}

const CAPTURE = Symbol('capture');

/**
 * The response a {@link CapturedResponse} hands to the handler. Its
 * `headersSent` is its capture's, through a getter on this prototype rather
 * than one defined on each response: V8 keeps an accessor defined on an
 * object in its old generation, and with it the getter's closure and the
 * whole request, until a full collection.
 */
class CapturedServerResponse extends ServerResponse {
  readonly [CAPTURE]: CapturedResponse;

  constructor(req: IncomingMessage, capture: CapturedResponse) {
    super(req);
    this[CAPTURE] = capture;
  }
}
Object.defineProperty(CapturedServerResponse.prototype, 'headersSent', {
  get(this: CapturedServerResponse) {
    return this[CAPTURE].started;
  },
  configurable: true,
});

/**
 * A `ServerResponse` with no socket whose status, headers and body are
 * collected: `writeHead`, `setHeader`, `write`, `end` and `pipe` into it work
 * as on a real response.
 */
class CapturedResponse {
  readonly res: ServerResponse;
  started = false;
  readonly #chunks: Buffer[] = [];
  #status = 200;
  #done: Promise<void>;
  #finish!: () => void;
  #error: unknown;

  constructor(req: IncomingMessage) {
    const res: ServerResponse = new CapturedServerResponse(req, this);
    this.res = res;
    this.#done = new Promise<void>((resolve) => {
      this.#finish = resolve;
    });
    const self = this;
    res.writeHead = function writeHead(status: number, ...rest: unknown[]) {
      res.statusCode = status;
      const headers = rest.find((item) => typeof item === 'object' && item !== null) as
        | Record<string, string | number | string[]>
        | Array<string>
        | undefined;
      if (Array.isArray(headers)) {
        for (let i = 0; i + 1 < headers.length; i += 2) appendHeader(res, headers[i] as string, headers[i + 1] as string);
      } else if (headers) {
        for (const [name, value] of Object.entries(headers)) if (value !== undefined) res.setHeader(name, value);
      }
      self.#start();
      return res;
    } as ServerResponse['writeHead'];
    res.write = function write(chunk: unknown, encoding?: unknown, callback?: unknown) {
      self.#start();
      self.#push(chunk, encoding);
      const done = typeof encoding === 'function' ? encoding : callback;
      if (typeof done === 'function') queueMicrotask(() => (done as () => void)());
      return true;
    } as ServerResponse['write'];
    res.end = function end(chunk?: unknown, encoding?: unknown, callback?: unknown) {
      if (self.#ended) return res;
      self.#start();
      if (typeof chunk === 'function') callback = chunk;
      else if (chunk !== undefined && chunk !== null) self.#push(chunk, encoding);
      if (typeof encoding === 'function') callback = encoding;
      self.#ended = true;
      (res as { finished: boolean }).finished = true;
      Object.defineProperty(res, 'writableEnded', { value: true, configurable: true });
      Object.defineProperty(res, 'writableFinished', { value: true, configurable: true });
      self.#finish();
      queueMicrotask(() => {
        res.emit('prefinish');
        res.emit('finish');
        res.emit('close');
        if (typeof callback === 'function') (callback as () => void)();
      });
      return res;
    } as ServerResponse['end'];
    res.destroy = function destroy(error?: Error) {
      self.fail(error ?? new Error('response destroyed'));
      return res;
    } as ServerResponse['destroy'];
  }

  #ended = false;

  #start() {
    if (this.started) return;
    this.started = true;
    this.#status = this.res.statusCode;
  }

  #push(chunk: unknown, encoding: unknown) {
    if (typeof chunk === 'string')
      this.#chunks.push(Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
    else if (chunk instanceof Uint8Array) this.#chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }

  fail(error: unknown) {
    this.#error = error ?? new Error('response failed');
    this.#ended = true;
    this.#finish();
  }

  async response(): Promise<Response> {
    await this.#done;
    if (this.#error !== undefined) throw this.#error;
    const headers = new Headers();
    for (const [name, value] of Object.entries(this.res.getHeaders())) {
      if (value === undefined) continue;
      if (Array.isArray(value)) for (const item of value) headers.append(name, item);
      else headers.set(name, String(value));
    }
    const status = this.#status;
    const bodyless = status === 204 || status === 304 || this.res.req.method === 'HEAD';
    const body = bodyless ? null : Buffer.concat(this.#chunks);
    return new Response(body, { status, statusText: this.res.statusMessage || '', headers });
  }
}

function appendHeader(res: ServerResponse, name: string, value: string) {
  const existing = res.getHeader(name);
  if (existing === undefined) res.setHeader(name, value);
  else res.setHeader(name, [...(Array.isArray(existing) ? existing : [String(existing)]), value]);
}
