/** Every request under `/idt` goes to idt: API, discovery, `/connect/*`, the sign-in pages. */
import { getIdt } from '../../../lib/idt.js';

/** idt runs on Node.js (knex, the OpenID provider), not on the Edge runtime. */
export const runtime = 'nodejs';

async function handle(request: Request): Promise<Response> {
  const idt = await getIdt();
  return idt.fetch(request);
}

export { handle as DELETE, handle as GET, handle as HEAD, handle as OPTIONS, handle as PATCH, handle as POST, handle as PUT };
