// server.ts: a web server that starts work and waits for it, without the task code
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OrreryClient, ValidationError, WorkflowNotFoundError } from '@orreryjs/runner';

const client = await OrreryClient.create({ database: process.env.DATABASE_URL });
const server = createServer(async (req, res) => {
  res.setHeader('Content-Type', 'application/json');
  try {
    const url = new URL(req.url ?? '/', 'http://localhost'); // GET /nightly-report?day=2026-11-22
    const [workflow, day] = [decodeURIComponent(url.pathname.slice(1)), url.searchParams.get('day') ?? '2026-11-22'];
    const execution = await client.executeAsync(workflow, { day }, { idempotencyKey: `${workflow}:${day}` });
    const result = await execution.wait({ timeoutMs: 60_000 }); // rejects with PipelineTimeoutError after that
    res.end(JSON.stringify({ id: execution.id, status: result.status, total: result.finalContext.total ?? null }));
  } catch (error) {
    // An unknown workflow (WorkflowNotFoundError names the known ones) or a bad input is the caller's
    // mistake: 400. A handler must not throw: node:http would leave the rejection unhandled and exit.
    const known = error instanceof WorkflowNotFoundError || error instanceof ValidationError;
    res.statusCode = known ? 400 : 500;
    res.end(JSON.stringify({ error: known ? error.message : 'internal error' }));
  }
});
server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on('SIGTERM', () => server.close(() => void client.close()));

for (const runner of await client.listRunners()) console.log(runner.id, runner.alive, runner.workflows);
for (const workflow of await client.listWorkflows()) console.log(workflow.name, workflow.version, workflow.lastSeenAt);
