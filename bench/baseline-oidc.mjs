/**
 * The client-credentials baseline: stock oidc-provider (the version idt
 * installs) with its default in-memory adapter, one static confidential
 * client, and JWT access tokens signed with ES256 for one resource server,
 * which is what idt issues. No idt code is involved.
 *
 *   node bench/baseline-oidc.mjs <port>
 *
 * Reads BENCH_CLIENT_ID and BENCH_CLIENT_SECRET; prints `listening <url>`
 * once it accepts connections.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';

const port = Number(process.argv[2] ?? 0);
const issuer = `http://127.0.0.1:${port}`;
const resource = issuer;
const clientId = process.env.BENCH_CLIENT_ID ?? 'bench-client';
const clientSecret = process.env.BENCH_CLIENT_SECRET ?? 'bench-secret-bench-secret-bench-secret';

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'bench-es256', alg: 'ES256', use: 'sig' };

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
      // The only key is ES256 (RS256 is the default, and unused by client credentials).
      id_token_signed_response_alg: 'ES256',
    },
  ],
  jwks: { keys: [jwk] },
  routes: { token: '/connect/token' },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => resource,
      useGrantedResource: async () => true,
      getResourceServerInfo: async () => ({
        scope: 'users.read',
        audience: resource,
        accessTokenTTL: 900,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
  ttl: { ClientCredentials: 900 },
});
provider.on('server_error', (_ctx, error) => console.error('server_error', error));

const server = createServer({ keepAliveTimeout: 65_000 }, provider.callback());
server.listen(port, '127.0.0.1', () => console.log(`listening ${issuer}`));
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
