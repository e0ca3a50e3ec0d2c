/**
 * The API baseline: a bare node:http server answering every request with a
 * small JSON body, no authentication, no database. The ceiling of what a
 * Node.js process on one core can answer.
 *
 *   node bench/baseline-http.mjs <port>
 *
 * Prints `listening <url>` once it accepts connections.
 */
import { createServer } from 'node:http';

const port = Number(process.argv[2] ?? 0);
const body = JSON.stringify({
  items: [{ id: '00000000-0000-4000-8000-000000000000', email: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace' }],
  nextCursor: null,
});

const server = createServer({ keepAliveTimeout: 65_000 }, (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(port, '127.0.0.1', () => console.log(`listening http://127.0.0.1:${port}`));
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
