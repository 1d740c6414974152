import { DatabaseError, newId, type Storage } from '@orreryjs/core';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempSqliteFile } from '../../../test/support/sqlite.js';
import { openSqliteStorage } from '../src/index.js';

let filename: string;
let remove: () => void;
let storage: Storage;
beforeEach(async () => {
  ({ filename, remove } = tempSqliteFile());
  storage = await openSqliteStorage({ filename });
});
afterEach(async () => {
  await storage.close();
  remove();
});

function readRaw<T>(query: string, ...params: unknown[]): T {
  const db = new Database(filename, { readonly: true });
  try {
    return db.prepare(query).get(...params) as T;
  } finally {
    db.close();
  }
}

function queryPlan(query: string): string {
  const db = new Database(filename, { readonly: true });
  try {
    const rows = db.prepare(`EXPLAIN QUERY PLAN ${query}`).all() as Array<{ detail: string }>;
    return rows.map((row) => row.detail).join('\n');
  } finally {
    db.close();
  }
}

describe('SQLite storage format', () => {
  it('stores ids as 16-byte BLOBs, instants as INTEGER milliseconds, JSON as TEXT and booleans as 0/1', async () => {
    const id = newId();
    const now = new Date('2026-03-04T05:06:07.890Z');
    await storage.cron.insertSchedule({
      id,
      name: 'nightly',
      workflowName: 'wf',
      cronExpression: '0 0 * * *',
      timezone: 'UTC',
      enabled: true,
      context: { region: 'eu' },
      catchupPolicy: 'run_once',
      overlapPolicy: 'allow',
      jitterMs: 0,
      pauseOnFailure: false,
      enabledAt: now,
      maxRuns: null,
      runCount: 0,
      dst: null,
      note: null,
      startAt: null,
      endAt: null,
      nextRunAt: now,
      lastRunAt: null,
      version: 1,
      createdAt: now,
      updatedAt: now,
    });
    const raw = readRaw<Record<string, unknown>>(
      'SELECT id, typeof(id) AS idType, length(id) AS idLength, next_run_at, typeof(next_run_at) AS tsType, context, enabled FROM cron_schedules',
    );
    expect(raw).toMatchObject({
      idType: 'blob',
      idLength: 16,
      next_run_at: now.getTime(),
      tsType: 'integer',
      context: '{"region":"eu"}',
      enabled: 1,
    });
    expect((raw.id as Buffer).toString('hex')).toBe(id.replaceAll('-', ''));
  });

  it('uses the partial indexes for queries that repeat their literal conditions', () => {
    const due = queryPlan(
      'SELECT id FROM cron_schedules WHERE cron_schedules.enabled = 1 AND next_run_at <= 0 ORDER BY next_run_at LIMIT 10',
    );
    expect(due).toContain('cron_schedules_due_idx');
    const claim = queryPlan(
      "SELECT id FROM task_executions WHERE task_executions.status = 'ready' AND priority = 0 AND available_at <= 0 ORDER BY available_at LIMIT 10",
    );
    expect(claim).toContain('task_executions_claim_idx');
    expect(claim).not.toContain('TEMP B-TREE');
    const byPriority = queryPlan(
      "SELECT id FROM task_executions WHERE task_executions.status = 'ready' AND priority <> 0 AND available_at <= 0 ORDER BY priority DESC, available_at LIMIT 10",
    );
    expect(byPriority).toContain('task_executions_priority_claim_idx');
  });

  it("finds a schedule's newest pipeline in one step of its partial index (pauseOnFailure, at every claim)", () => {
    const latest = queryPlan(
      "SELECT id FROM pipeline_executions WHERE pipeline_executions.schedule_id = x'00' ORDER BY created_at DESC LIMIT 1",
    );
    expect(latest).toContain('pipeline_executions_schedule_id_created_at_idx');
    expect(latest).not.toContain('TEMP B-TREE');
  });

  it('wraps a driver failure as DatabaseError naming the port method, keeping the cause', async () => {
    await storage.close();
    const failure = await storage.executions.getPipeline(newId()).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DatabaseError);
    expect((failure as DatabaseError).message).toMatch(/^getPipeline failed: /);
    expect((failure as DatabaseError).cause).toBeInstanceOf(Error);
  });
});
