// #region readme
import { createServer } from 'node:http';
import { createDashboard } from '@orreryjs/dashboard';
import { OrreryClient } from '@orreryjs/runner';

const token = process.env.ORRERY_ADMIN_TOKEN;
if (!token) throw new Error('set ORRERY_ADMIN_TOKEN');
const port = Number(process.env.PORT ?? 4600);
const client = await OrreryClient.create({ database: process.env.DATABASE_URL ?? 'postgres://app@db.internal:5432/app' });
const dashboard = createDashboard({
  client,
  basePath: '/orrery', // default '/'
  readOnly: false, // true: no buttons, every action answers 403
  authorize: (request) => request.headers.get('authorization') === `Bearer ${token}`,
  allowedHosts: ['ops.example.com', `127.0.0.1:${port}`], // default: any Host
});

// node:http; with Express: app.use('/orrery', dashboard.handle)
const server = createServer(dashboard.handle).listen(port, '127.0.0.1', () => console.log(`http://127.0.0.1:${port}/orrery/`));
process.on('SIGTERM', () => server.close(() => void client.close()));

// Fetch API; with Hono: app.all('/orrery/*', (c) => dashboard.fetch(c.req.raw))
export default { fetch: (request: Request) => dashboard.fetch(request) };
// #endregion readme
