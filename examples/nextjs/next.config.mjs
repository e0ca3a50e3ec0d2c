/** @type {import('next').NextConfig} */
const nextConfig = {
  // Required by Node.js at run time rather than bundled: knex loads its database driver dynamically.
  serverExternalPackages: ['@idt/core', '@idt/identity', '@idt/oidc', 'knex', 'oidc-provider'],
};

export default nextConfig;
