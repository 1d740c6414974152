import type { DefaultRunner, OrreryClient, RunnerHealth } from '@orreryjs/runner';

/**
 * What the dashboard reads and acts through: an `OrreryClient`, or a `DefaultRunner` (which
 * offers every client call, and its own `health()`).
 */
export type DashboardClient = OrreryClient | DefaultRunner;

/**
 * True when the client is a `DefaultRunner` (it has its own `health()`); a plain
 * `OrreryClient` runs no loops and has none.
 */
export function isRunner(client: DashboardClient): client is DefaultRunner {
  return typeof (client as { health?: unknown }).health === 'function';
}

/** The client's own health when it is a runner, else null (the overview then reports the fleet's). */
export function runnerHealth(client: DashboardClient): Promise<RunnerHealth> | null {
  return isRunner(client) ? client.health() : null;
}
