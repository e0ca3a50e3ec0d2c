/**
 * The client's IP address: the first `X-Forwarded-For` entry when a trusted
 * proxy sets it, else the peer address of the connection (`undefined` when
 * neither is known).
 *
 * @example
 * const ip = clientIpOf(req.headers['x-forwarded-for'], req.socket.remoteAddress, config.trustProxy) ?? 'unknown';
 */
export function clientIpOf(
  forwardedFor: string | string[] | null | undefined,
  remoteAddress: string | undefined,
  trustProxy: boolean,
): string | undefined {
  if (trustProxy && forwardedFor) {
    const first = (Array.isArray(forwardedFor) ? forwardedFor[0] : forwardedFor)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return remoteAddress;
}
