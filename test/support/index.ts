export type { TestDatabase, TestDialect } from './database.js';
export { createTestDatabase, testDialects } from './database.js';
export type { TestServer, TestServerOptions } from './server.js';
export { startTestServer } from './server.js';
