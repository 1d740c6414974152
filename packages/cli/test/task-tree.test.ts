import type { TaskResult } from '@orreryjs/core';
import { describe, expect, it } from 'vitest';
import { attachDependencies, attachSignalWaits, drawTaskTree } from '../src/task-tree.js';
import { flaky, report } from './fixtures/workflows.js';

const completed = (taskId: string, durationMs: number): TaskResult => ({
  taskId,
  status: 'completed',
  attempts: 1,
  durationMs,
  attemptHistory: [],
});

describe('drawTaskTree', () => {
  it('hangs each task under its last dependency in canonical order and names the others', () => {
    const tasks = attachDependencies(
      [completed('extract', 12), completed('transform', 1500), completed('load', 80), completed('notify', 3)],
      report,
    );
    expect(drawTaskTree(tasks)).toEqual([
      'TASK                                      STATE      ATTEMPTS  DURATION',
      'extract                                   completed  1         12ms',
      '└── transform                             completed  1         1.5s',
      '    └── load                              completed  1         80ms',
      '        └── notify (also after: extract)  completed  1         3ms',
    ]);
  });

  it('draws siblings with branch and continuation characters', () => {
    const lines = drawTaskTree([
      { taskId: 'root', status: 'completed', attempts: 1, dependsOn: [], attemptHistory: [] },
      {
        taskId: 'left',
        status: 'failed',
        attempts: 3,
        dependsOn: ['root'],
        error: 'boom\nat line 2',
        attemptHistory: [],
      },
      { taskId: 'leaf', status: 'skipped', attempts: 0, dependsOn: ['left'], attemptHistory: [] },
      { taskId: 'right', status: 'running', attempts: 1, dependsOn: ['root'], attemptHistory: [] },
    ]);
    expect(lines.map((line) => line.trimEnd())).toEqual([
      'TASK          STATE      ATTEMPTS  DURATION',
      'root          completed  1         -',
      '├── left      failed     3         -  boom at line 2',
      '│   └── leaf  skipped    0         -',
      '└── right     running    1         -',
    ]);
  });

  it('lists tasks flat in canonical order when the definition is unknown or has other tasks', () => {
    const tasks = [completed('wobble', 5), completed('give-up', 6)];
    expect(attachDependencies(tasks, undefined).every((task) => task.dependsOn === undefined)).toBe(true);
    expect(attachDependencies(tasks, report).every((task) => task.dependsOn === undefined)).toBe(true);
    expect(attachDependencies(tasks, flaky).map((task) => task.dependsOn)).toEqual([[], ['wobble']]);
    expect(drawTaskTree(attachDependencies(tasks, undefined)).slice(1)).toEqual([
      'wobble   completed  1         5ms',
      'give-up  completed  1         6ms',
    ]);
  });

  it('ends the line of a ready wait task with the signal it waits for and its deadline', () => {
    const definition = {
      tasks: [
        { id: 'request', dependsOn: [] },
        { id: 'approval', dependsOn: ['request'], waitFor: { signal: 'approved', timeoutMs: 60_000 } },
        { id: 'hold', dependsOn: ['request'], waitFor: { signal: 'go' } },
      ],
    };
    const ready = (taskId: string, waitsUntil?: Date): TaskResult => ({
      taskId,
      status: 'ready',
      attempts: 0,
      attemptHistory: [],
      ...(waitsUntil === undefined ? {} : { waitsUntil }),
    });
    const tasks = attachSignalWaits(
      attachDependencies(
        [completed('request', 4), ready('approval', new Date('2026-11-27T09:00:00Z')), ready('hold')],
        definition,
      ),
      definition,
    );
    expect(tasks.map((task) => task.signalWait?.signal)).toEqual([undefined, 'approved', 'go']);
    expect(drawTaskTree(tasks).slice(1)).toEqual([
      'request       completed  1         4ms',
      '├── approval  ready      0         -  waiting for signal approved (until 2026-11-27T09:00:00.000Z)',
      '└── hold      ready      0         -  waiting for signal go (no timeout)',
    ]);
  });

  it('draws a map task once, with its instance counts before its error', () => {
    const each = (status: TaskResult['status'], counts: NonNullable<TaskResult['instances']>, error?: string) => ({
      taskId: 'each',
      status,
      attempts: 1,
      attemptHistory: [],
      instances: counts,
      ...(error === undefined ? {} : { error }),
    });
    expect(drawTaskTree([each('running', { total: 200, completed: 150, failed: 0, running: 3 })]).slice(1)).toEqual([
      'each  running  1         -  items 200: 150 completed, 3 running, 0 failed',
    ]);
    expect(
      drawTaskTree([each('failed', { total: 4, completed: 0, failed: 1, running: 0 }, 'item 0 failed: broken')]).slice(
        1,
      ),
    ).toEqual(['each  failed  1         -  items 4: 0 completed, 0 running, 1 failed  item 0 failed: broken']);
  });
});
