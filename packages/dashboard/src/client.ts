import type { DefaultRunner, OrreryClient, RunnerHealth } from '@orreryjs/runner';

/**
 * True when the client is a `DefaultRunner` (it has its own `health()`); a plain
 * `OrreryClient` runs no loops and has none.
 */
export function isRunner(client: OrreryClient): client is DefaultRunner {
  return typeof (client as { health?: unknown }).health === 'function';
}

/** The client's own health when it is a runner, else null (the overview then reports the fleet's). */
export function runnerHealth(client: OrreryClient): Promise<RunnerHealth> | null {
  return isRunner(client) ? client.health() : null;
}
