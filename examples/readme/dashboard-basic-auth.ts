import { createServer } from 'node:http';
// #region readme
import { createDashboard } from '@orreryjs/dashboard';
import { OrreryClient } from '@orreryjs/runner';

const password = process.env.ORRERY_ADMIN_PASSWORD;
if (!password) throw new Error('set ORRERY_ADMIN_PASSWORD');
const expected = `Basic ${Buffer.from(`ops:${password}`).toString('base64')}`;
const dashboard = createDashboard({
  client: await OrreryClient.create({ database: process.env.DATABASE_URL ?? 'postgres://app@db.internal:5432/app' }),
  authorize: (request) =>
    request.headers.get('authorization') === expected ||
    new Response('Log in to use the dashboard.', { status: 401, headers: { 'WWW-Authenticate': 'Basic realm="orrery"' } }),
});
// #endregion readme

// Not in the README: serve it (as above), until SIGTERM.
const server = createServer(dashboard.handle).listen(Number(process.env.PORT ?? 4600), '127.0.0.1', () => {
  console.log(`listening on ${JSON.stringify(server.address())}`);
});
process.on('SIGTERM', () => server.close());
