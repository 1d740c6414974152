import pg from 'pg';

/**
 * Terminates (`pg_terminate_backend`) every connection to the server at `url` whose
 * `application_name` starts with `applicationNamePrefix`, except the one asking; returns how
 * many went. Opens a connection of its own each time, so that it works across a server restart.
 */
export async function terminateBackends(url: string, applicationNamePrefix: string): Promise<number> {
  const client = new pg.Client({ connectionString: url, application_name: 'orrery-test-terminator' });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const result = await client.query<{ terminated: boolean }>(
      `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
       WHERE starts_with(application_name, $1) AND pid <> pg_backend_pid()`,
      [applicationNamePrefix],
    );
    return result.rows.filter((row) => row.terminated).length;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The connections to the server at `url` whose `application_name` is `applicationName`, in pid
 * order: each backend's pid and the last statement it ran ('' for none), as pg_stat_activity
 * shows them.
 */
export async function connectionsNamed(
  url: string,
  applicationName: string,
): Promise<Array<{ pid: number; query: string }>> {
  const client = new pg.Client({ connectionString: url, application_name: 'orrery-test-observer' });
  await client.connect();
  try {
    const result = await client.query<{ pid: number; query: string }>(
      'SELECT pid, query FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid',
      [applicationName],
    );
    return result.rows;
  } finally {
    await client.end();
  }
}
