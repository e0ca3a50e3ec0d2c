/** The largest negotiate response the proxy rewrites (they are a few hundred bytes). */
const MAX_NEGOTIATE_BYTES = 64 * 1024;

/**
 * Members of a SignalR negotiate response that redirect the client elsewhere
 * with a token of its own (Azure SignalR): a browser behind the BFF must
 * never receive a token, nor be sent around the BFF.
 */
const REDIRECT_MEMBERS = ['url', 'accessToken'] as const;

/**
 * The negotiate response of the hub with any `url`/`accessToken` redirect
 * members removed. Other responses (errors, non-JSON, too large) pass
 * unchanged; a body that cannot be read as JSON is passed as read.
 */
export async function sanitizeNegotiateResponse(response: Response): Promise<Response> {
  if (response.status !== 200 || !response.body) return response;
  const type = response.headers.get('content-type') ?? '';
  if (!/\bjson\b/i.test(type)) return response;
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > MAX_NEGOTIATE_BYTES) return response;
  const text = await response.text();
  let body = text;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      const record = parsed as Record<string, unknown>;
      if (REDIRECT_MEMBERS.some((member) => member in record)) {
        for (const member of REDIRECT_MEMBERS) delete record[member];
        body = JSON.stringify(record);
      }
    }
  } catch {
    // not JSON after all: pass it on as it came
  }
  const headers = new Headers(response.headers);
  headers.set('content-length', String(Buffer.byteLength(body)));
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}
