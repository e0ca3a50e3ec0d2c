/**
 * Whether a client may introspect or revoke a token: only the client the
 * token was issued to. Any other client, of the same organization or not,
 * learns nothing from `/connect/introspect` (`{"active":false}`) and cannot
 * revoke the token at `/connect/revoke` (RFC 7009 section 2.1).
 */
export function ownsToken(client: { readonly clientId: string }, token: { readonly clientId?: string }): boolean {
  return token.clientId === client.clientId;
}
