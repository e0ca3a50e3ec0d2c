export type { TestDatabase, TestDialect } from './database.js';
export { connectTestDatabase, createTestDatabase, testDialects } from './database.js';
export type { TestServer, TestServerOptions } from './server.js';
export { startTestServer } from './server.js';
export type { MintOptions, TestTokenClaims } from './tokens.js';
export { mintAccessToken } from './tokens.js';
export { bearer, seedMembership, seedOrganization, seedTenant, seedUser } from './identity.js';
export type { SeededUser } from './identity.js';
