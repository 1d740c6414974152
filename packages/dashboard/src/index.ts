/**
 * @orreryjs/dashboard — the operator dashboard: schedules, the cron ledger and DAG runs in a
 * browser, with a JSON API and live updates, mountable in any Node server.
 */
export { CSRF_HEADER, createDashboard, type Dashboard, type DashboardOptions } from './dashboard.js';
