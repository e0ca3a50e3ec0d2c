import { startFastifyApp } from './app.js';

const { baseUrl, close } = await startFastifyApp({ database: 'sqlite:./data/idt.sqlite', port: 3000 });
console.log(`idt is served under ${baseUrl} (discovery: ${baseUrl}/.well-known/openid-configuration)`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void close());
