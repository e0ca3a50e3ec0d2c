import { describe, expect, it } from 'vitest';
import { NOT_ALLOWED_FOR_CLIENT, unauthorizedClient } from './unauthorized-client.js';

describe('unauthorized_client for what a registration does not allow', () => {
  it('answers a grant type the client is not registered for with unauthorized_client, naming the grant', () => {
    const body = { error: 'invalid_request', error_description: NOT_ALLOWED_FOR_CLIENT.grantType };
    expect(unauthorizedClient(body, 'client_credentials')).toEqual({
      error: 'unauthorized_client',
      error_description: 'This client is not registered for the client_credentials grant.',
    });
    expect(unauthorizedClient(body, 'refresh_token')?.error_description).toBe(
      'This client is not registered for the refresh_token grant.',
    );
    // Only the grants idt serves are named back.
    expect(unauthorizedClient(body, '<script>')?.error_description).toBe(
      'This client is not registered for the requested grant type.',
    );
    expect(unauthorizedClient(body, ['a', 'b'])?.error).toBe('unauthorized_client');
  });

  it('answers a response type the client may not use with unauthorized_client', () => {
    expect(
      unauthorizedClient({ error: 'invalid_request', error_description: NOT_ALLOWED_FOR_CLIENT.responseType }, undefined),
    ).toMatchObject({ error: 'unauthorized_client' });
  });

  it('keeps every other answer', () => {
    expect(
      unauthorizedClient({ error: 'invalid_request', error_description: 'missing required parameter' }, 'x'),
    ).toBeUndefined();
    expect(
      unauthorizedClient({ error: 'invalid_grant', error_description: NOT_ALLOWED_FOR_CLIENT.grantType }, 'x'),
    ).toBeUndefined();
    expect(unauthorizedClient('<html>', 'x')).toBeUndefined();
    expect(unauthorizedClient(undefined, 'x')).toBeUndefined();
  });
});
