#!/usr/bin/env node
// The compiled CLI; run `npm run build` first. In the repository, prefer
// `node --import tsx --conditions=source packages/cli/src/main.ts`.
await import('../dist/main.js');
