import { newId, type Storage, type WakeUp } from '@orreryjs/core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectionsNamed } from '../../../test/support/backends.js';
import { dropSchema, freshSchemaName, postgresUrl } from '../../../test/support/postgres.js';
import { openPostgresStorage } from '../src/index.js';
import { listenApplicationName, parseWakeUp } from '../src/wake-up.js';

/*
 * The NOTIFY side of the wake-up: migration 0002's triggers, seen by a plain LISTEN client.
 * Each step ends with a marker notification from a later transaction; notifications arrive in
 * commit order, so what arrived before the marker is exactly what the step sent.
 */

const schema = freshSchemaName();
const channel = `orrery.${schema}`;
let storage: Storage;
let listener: pg.Client;
let writer: pg.Client;
const received: string[] = [];
let markers = 0;

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: postgresUrl(), options: `-c search_path=${schema}` });
  await client.connect();
  return client;
}

/** Runs `sql` on the writer (each statement its own transaction), or `sql()`, and returns the payloads it notified. */
async function notifiedBy(sql: string | (() => Promise<unknown>), params: unknown[] = []): Promise<string[]> {
  received.length = 0;
  await (typeof sql === 'string' ? writer.query(sql, params) : sql());
  markers += 1;
  const marker = `marker-${markers}`;
  await writer.query(`SELECT pg_notify($1, $2)`, [channel, marker]);
  const deadline = performance.now() + 10_000;
  while (!received.includes(marker)) {
    if (performance.now() > deadline) throw new Error(`no ${marker} within 10 s; got ${JSON.stringify(received)}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return received.slice(0, received.indexOf(marker));
}

beforeAll(async () => {
  storage = await openPostgresStorage({ connectionString: postgresUrl(), schema, listen: false });
  listener = await connect();
  listener.on('notification', (message) => {
    if (message.channel === channel) received.push(message.payload ?? '');
  });
  await listener.query(`LISTEN "${channel}"`);
  writer = await connect();
});

afterAll(async () => {
  await listener?.end();
  await writer?.end();
  await storage?.close();
  await dropSchema(schema);
});

const pipelineId = newId();
const taskId = newId();
const scheduleId = newId();
const now = new Date('2030-01-01T00:00:00.000Z');
const later = new Date('2030-01-01T00:00:05.000Z');

/** A pending pipeline of workflow `w`, whose tasks the tests insert themselves. */
function insertPipeline(id: string): Promise<unknown> {
  return writer.query(
    `INSERT INTO pipeline_executions (id, workflow_name, workflow_version, status, input, remaining_tasks, failed_tasks, created_at, updated_at)
     VALUES ($1, 'w', 'v1', 'pending', '{}', 4, 0, $2, $2)`,
    [id, now],
  );
}

/** A task row of {@link insertTasks}: ready, of workflow `w`, available and updated `now` unless said. */
interface TaskValues {
  task: string;
  status?: string;
  workflow?: string;
  availableAt?: Date;
  updatedAt?: Date;
}

/** One INSERT statement of `rows` into pipeline `pipelineId`'s tasks. */
function insertTasks(pipelineId: string, rows: readonly TaskValues[]): string {
  const values = rows.map(
    ({ task, status = 'ready', workflow = 'w', availableAt = now, updatedAt = now }, i) =>
      `(gen_random_uuid(), '${pipelineId}', '${workflow}', '${task}', ${i}, '${status}', 0, 0, 0, '${availableAt.toISOString()}', '${updatedAt.toISOString()}')`,
  );
  return `INSERT INTO task_executions (id, pipeline_execution_id, workflow_name, task_id, position, status, attempt, failed_attempts, pending_deps, available_at, updated_at)
     VALUES ${values.join(', ')}`;
}

describe('wake-up notifications (migration 0002)', () => {
  it('are delivered only when the writing transaction commits, never while it is open', async () => {
    const transaction = await connect();
    try {
      await transaction.query('BEGIN');
      await transaction.query(
        `INSERT INTO pipeline_executions (id, workflow_name, workflow_version, status, input, remaining_tasks, failed_tasks, created_at, updated_at)
         VALUES ($1, 'w', 'v1', 'pending', '{}', 1, 0, $2, $2)`,
        [pipelineId, now],
      );
      await transaction.query(
        `INSERT INTO task_executions (id, pipeline_execution_id, workflow_name, task_id, position, status, attempt, failed_attempts, pending_deps, available_at, updated_at)
         VALUES ($1, $2, 'w', 't', 0, 'ready', 0, 0, 0, $3, $3)`,
        [taskId, pipelineId, now],
      );
      // The trigger has run; a round trip on the listener would bring a notification already sent.
      expect(await notifiedBy('SELECT 1')).toEqual([]);
      expect(await notifiedBy(() => transaction.query('COMMIT'))).toEqual([`task:${now.getTime()}:w`]);
    } finally {
      await transaction.end();
    }
  });

  it('are not sent by a rolled-back transaction', async () => {
    expect(
      await notifiedBy(
        `DO $$ BEGIN
           UPDATE task_executions SET status = 'running' WHERE id = '${taskId}';
           UPDATE task_executions SET status = 'ready' WHERE id = '${taskId}';
           RAISE EXCEPTION 'roll back';
         EXCEPTION WHEN raise_exception THEN NULL; END $$`,
      ),
    ).toEqual([]);
  });

  it('are not sent by a claim (ready -> running, pending -> running)', async () => {
    expect(
      await notifiedBy(`UPDATE task_executions SET status = 'running', updated_at = $1 WHERE id = $2`, [now, taskId]),
    ).toEqual([]);
    expect(
      await notifiedBy(`UPDATE pipeline_executions SET status = 'running', updated_at = $1 WHERE id = $2`, [
        now,
        pipelineId,
      ]),
    ).toEqual([]);
  });

  it('are not sent for a retry that waits out a back-off, and are for a task ready now', async () => {
    expect(
      await notifiedBy(
        `UPDATE task_executions SET status = 'ready', available_at = $1, updated_at = $2 WHERE id = $3`,
        [later, now, taskId],
      ),
    ).toEqual([]);
    await writer.query(`UPDATE task_executions SET status = 'running' WHERE id = $1`, [taskId]);
    expect(
      await notifiedBy(
        `UPDATE task_executions SET status = 'ready', available_at = $1, updated_at = $1 WHERE id = $2`,
        [now, taskId],
      ),
    ).toEqual([`task:${now.getTime()}:w`]);
  });

  it('are one per statement inserting ready tasks, at the latest of their available_at (migration 0014)', async () => {
    const batch = newId();
    await insertPipeline(batch);
    const soon = new Date(now.getTime() + 2);
    // Waiting rows only (a dependent, a delayed start): nothing to claim, no wake-up.
    expect(
      await notifiedBy(
        insertTasks(batch, [
          { task: 'pending', status: 'pending' },
          { task: 'delayed', availableAt: later },
        ]),
      ),
    ).toEqual([]);
    // Two ready now among waiting ones: one wake-up, when both are claimable.
    expect(
      await notifiedBy(
        insertTasks(batch, [
          { task: 'first', updatedAt: soon },
          { task: 'second', availableAt: soon, updatedAt: soon },
          { task: 'third', status: 'pending', updatedAt: soon },
          { task: 'fourth', availableAt: later, updatedAt: soon },
        ]),
      ),
    ).toEqual([`task:${soon.getTime()}:w`]);
  });

  it('name the workflow of the ready tasks inserted when there is one, and none for several or a name past 1,000 bytes (migration 0015)', async () => {
    const mixed = newId();
    const long = `w:${'x'.repeat(999)}`;
    await insertPipeline(mixed);
    // A name holds colons; the listener reads it whole.
    expect(
      await notifiedBy(
        insertTasks(mixed, [
          { task: 'one', workflow: 'a:b' },
          { task: 'two', workflow: 'a:b' },
        ]),
      ),
    ).toEqual([`task:${now.getTime()}:a:b`]);
    expect(
      await notifiedBy(
        insertTasks(mixed, [
          { task: 'three', workflow: 'a:b' },
          { task: 'four', workflow: 'c' },
        ]),
      ),
    ).toEqual([`task:${now.getTime()}`]);
    expect(await notifiedBy(insertTasks(mixed, [{ task: 'five', workflow: long }]))).toEqual([`task:${now.getTime()}`]);
    expect(await notifiedBy(insertTasks(mixed, [{ task: 'six', workflow: long.slice(1) }]))).toEqual([
      `task:${now.getTime()}:${long.slice(1)}`,
    ]);
    // A task readied by an update names its workflow too, within the same bound.
    expect(
      await notifiedBy(
        `UPDATE task_executions SET status = 'pending' WHERE pipeline_execution_id = $1 AND task_id IN ('five', 'six')`,
        [mixed],
      ),
    ).toEqual([]);
    expect(
      await notifiedBy(
        `UPDATE task_executions SET status = 'ready' WHERE pipeline_execution_id = $1 AND task_id = 'five'`,
        [mixed],
      ),
    ).toEqual([`task:${now.getTime()}`]);
    expect(
      await notifiedBy(
        `UPDATE task_executions SET status = 'ready' WHERE pipeline_execution_id = $1 AND task_id = 'six'`,
        [mixed],
      ),
    ).toEqual([`task:${now.getTime()}:${long.slice(1)}`]);
  });

  it('name the pipeline when it is paused, resumed or ends', async () => {
    const update = `UPDATE pipeline_executions SET status = $1 WHERE id = $2`;
    expect(await notifiedBy(update, ['paused', pipelineId])).toEqual([`pipeline:paused:${pipelineId}`]);
    expect(await notifiedBy(update, ['running', pipelineId])).toEqual([`pipeline:running:${pipelineId}`]);
    expect(await notifiedBy(update, ['running', pipelineId])).toEqual([]);
    expect(await notifiedBy(update, ['completed', pipelineId])).toEqual([`pipeline:completed:${pipelineId}`]);
  });

  it('are sent when a schedule is added, enabled or made due sooner, not when the tick advances it', async () => {
    expect(
      await notifiedBy(
        `INSERT INTO cron_schedules (id, name, workflow_name, cron_expression, timezone, enabled, context, catchup_policy,
           overlap_policy, jitter_ms, next_run_at, version, created_at, updated_at)
         VALUES ($1, 's', 'w', '* * * * * *', 'UTC', true, '{}', 'skip', 'allow', 0, $2, 1, $2, $2)`,
        [scheduleId, now],
      ),
    ).toEqual([`schedule:${now.getTime()}`]);
    const retime = `UPDATE cron_schedules SET next_run_at = $1, version = version + 1 WHERE id = $2`;
    expect(await notifiedBy(retime, [later, scheduleId])).toEqual([]);
    expect(await notifiedBy(retime, [now, scheduleId])).toEqual([`schedule:${now.getTime()}`]);
    expect(await notifiedBy(`UPDATE cron_schedules SET enabled = false WHERE id = $1`, [scheduleId])).toEqual([]);
    expect(await notifiedBy(`UPDATE cron_schedules SET enabled = true WHERE id = $1`, [scheduleId])).toEqual([
      `schedule:${now.getTime()}`,
    ]);
  });
});

describe('parseWakeUp', () => {
  it.each<[string | undefined, WakeUp | null]>([
    ['task:1893456000000', { kind: 'tasks', availableAt: new Date(1893456000000) }],
    ['task:1893456000000:w', { kind: 'tasks', availableAt: new Date(1893456000000), workflowName: 'w' }],
    ['task:1893456000000:a:b:', { kind: 'tasks', availableAt: new Date(1893456000000), workflowName: 'a:b:' }],
    ['task:1893456000000:', { kind: 'tasks', availableAt: new Date(1893456000000) }],
    ['task', null],
    ['pipeline:completed:abc', { kind: 'pipeline', status: 'completed', id: 'abc' }],
    ['schedule:1893456000000', { kind: 'schedule', nextRunAt: new Date(1893456000000) }],
    ['schedule:', null],
    ['something-new', null],
    [undefined, null],
  ])('reads %j', (payload, expected) => {
    expect(parseWakeUp(payload)).toEqual(expected);
  });

  it('names the listen connection <applicationName>:listen, within 63 characters', () => {
    expect(listenApplicationName('orrery:w1')).toBe('orrery:w1:listen');
    expect(listenApplicationName('a'.repeat(63))).toBe(`${'a'.repeat(56)}:listen`);
  });
});

describe('the storage’s listen connection', () => {
  /** The last statement of the storage's listen connection, as pg_stat_activity shows it ('' for none). */
  async function lastListenStatement(applicationName: string): Promise<string | undefined> {
    const [connection] = await connectionsNamed(postgresUrl(), listenApplicationName(applicationName));
    return connection?.query;
  }

  it('LISTENs while it has subscribers, wakes each one at its LISTEN, and UNLISTENs when the last leaves', async () => {
    const applicationName = `wake-${newId().slice(0, 8)}`;
    const listening = await openPostgresStorage({ connectionString: postgresUrl(), schema, applicationName });
    try {
      const wakeUps = listening.wakeUps!;
      expect(await lastListenStatement(applicationName)).toBe('');

      const heard: WakeUp[] = [];
      const unsubscribe = wakeUps.subscribe((wakeUp) => heard.push(wakeUp));
      const second = wakeUps.subscribe(() => undefined);
      // What was committed before the LISTEN took effect notified no one: the subscriber is woken for everything.
      await expect.poll(() => heard, { timeout: 10_000 }).toEqual([{ kind: 'all' }]);
      expect(await lastListenStatement(applicationName)).toBe(`LISTEN "${channel}"`);

      await writer.query(`SELECT pg_notify($1, 'schedule:1893456000000')`, [channel]);
      await expect
        .poll(() => heard, { timeout: 10_000 })
        .toEqual([{ kind: 'all' }, { kind: 'schedule', nextRunAt: new Date(1893456000000) }]);

      unsubscribe();
      expect(await lastListenStatement(applicationName)).toBe(`LISTEN "${channel}"`);
      second();
      await expect.poll(() => lastListenStatement(applicationName), { timeout: 10_000 }).toBe(`UNLISTEN "${channel}"`);
    } finally {
      await listening.close();
    }
  });
});
