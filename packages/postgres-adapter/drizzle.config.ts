import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'drizzle-kit';

// drizzle-kit resolves paths against the working directory (and prefixes `out` with "./"), so make them
// relative to it from this file's location: the command then works from the repository root or this package.
const fromHere = (path: string) => relative(process.cwd(), fileURLToPath(new URL(path, import.meta.url))) || '.';

export default defineConfig({
  dialect: 'postgresql',
  schema: fromHere('./src/schema.ts'),
  out: fromHere('./drizzle'),
});
