import { DefaultRunner, type RunnerInfo, type WorkflowInfo } from '@orreryjs/runner';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { report } from './fixtures/workflows.js';
import { orrery, orreryJson } from './support/cli.js';
import { migratedSqliteDatabase, registerFixtureWorkflows } from './support/database.js';

const database = migratedSqliteDatabase();
const env = { ORRERY_DATABASE_URL: database.url };
beforeAll(() => registerFixtureWorkflows(database.url));
afterAll(() => database.remove());

describe('orrery workflows', () => {
  it('lists the workflows runners registered, with their tasks, without any module', () => {
    const listed = orreryJson<WorkflowInfo[]>(['workflows'], { env });
    expect(listed.map((w) => [w.name, w.tasks.map((t) => t.id)])).toEqual([
      ['flaky', ['wobble', 'give-up']],
      ['ping', ['pong']],
      ['report', ['extract', 'transform', 'load', 'notify']],
    ]);
    const table = orrery(['workflows'], { env });
    expect(table.status).toBe(0);
    expect(table.stdout).toContain(report.version);
  });
});

describe('orrery runners', () => {
  it('lists a running runner as alive, and a stopped one only with --all', async () => {
    const runner = await DefaultRunner.create({
      database: database.url,
      runnerId: 'cli-visible',
      workflows: [report],
      enableCronScheduling: false,
    });
    await runner.start();
    try {
      expect(orreryJson<RunnerInfo[]>(['runners'], { env })).toEqual([
        expect.objectContaining({ id: 'cli-visible', alive: true, workflows: ['report'], stoppedAt: null }),
      ]);
      expect(orrery(['runners'], { env }).stdout).toMatch(/cli-visible .* alive /);
    } finally {
      await runner.shutdown();
    }
    expect(orreryJson<RunnerInfo[]>(['runners'], { env })).toEqual([]);
    expect(orreryJson<RunnerInfo[]>(['runners', '--all'], { env })).toEqual([
      expect.objectContaining({ id: 'cli-visible', alive: false, stoppedAt: expect.any(String) }),
    ]);
  });
});
