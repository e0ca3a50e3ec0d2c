// Prints the seed file's JSON Schema, generated from the zod schema the CLI validates with:
//   node --import tsx packages/cli/scripts/seed-schema.ts > packages/cli/schema/seed.schema.json
import { seedJsonSchema } from '../src/seed/schema.js';

process.stdout.write(`${JSON.stringify(seedJsonSchema(), null, 2)}\n`);
