import { describe, expect, it } from 'vitest';
import { defineWorkflow, type TaskDefinition, WorkflowValidationError } from '../src/index.js';

const task = (id: string, dependsOn?: string[]): TaskDefinition => ({
  id,
  ...(dependsOn ? { dependsOn } : {}),
  run: () => {},
});

describe('defineWorkflow', () => {
  it('orders tasks topologically, breaking ties by declaration order', () => {
    const wf = defineWorkflow({
      name: 'etl',
      tasks: [
        task('load', ['transform', 'validate']),
        task('extract'),
        task('validate', ['extract']),
        task('transform', ['extract']),
      ],
    });
    expect(wf.tasks.map((t) => t.id)).toEqual(['extract', 'validate', 'transform', 'load']);
    expect(wf.ancestors.get('load')).toEqual(['extract', 'validate', 'transform']);
    expect(wf.dependents.get('extract')).toEqual(['validate', 'transform']);
  });

  it('gives the same structure the same version and another structure another', () => {
    const a = defineWorkflow({ name: 'w', tasks: [task('a'), task('b', ['a'])] });
    const b = defineWorkflow({ name: 'w', tasks: [task('a'), task('b', ['a'])] });
    const c = defineWorkflow({ name: 'w', tasks: [task('a'), task('b')] });
    expect(a.version).toBe(b.version);
    expect(a.version).not.toBe(c.version);
    expect(a.version).toMatch(/^[0-9a-f]{16}$/);
  });

  it('refuses an empty workflow', () => {
    expect(() => defineWorkflow({ name: 'w', tasks: [] })).toThrow(WorkflowValidationError);
    expect(() => defineWorkflow({ name: 'w', tasks: [] })).toThrow('Workflow "w" has no tasks');
  });

  it('refuses a duplicate task id', () => {
    expect(() => defineWorkflow({ name: 'w', tasks: [task('a'), task('a')] })).toThrow(
      'Workflow "w": duplicate task id "a".',
    );
  });

  it('refuses an unknown dependency', () => {
    expect(() => defineWorkflow({ name: 'w', tasks: [task('a', ['ghost'])] })).toThrow(
      'Workflow "w": task "a" depends on unknown task "ghost".',
    );
  });

  it('refuses a cycle and names the tasks on it', () => {
    const define = () =>
      defineWorkflow({ name: 'w', tasks: [task('root'), task('a', ['c']), task('b', ['a']), task('c', ['b'])] });
    expect(define).toThrow(WorkflowValidationError);
    expect(define).toThrow(/has a cycle: (a -> c -> b -> a|b -> a -> c -> b|c -> b -> a -> c)/);
  });

  it('refuses an invalid task id and an unknown trigger', () => {
    expect(() => defineWorkflow({ name: 'w', tasks: [task('1abc')] })).toThrow('task id "1abc" is invalid');
    expect(() => defineWorkflow({ name: 'w', tasks: [{ ...task('a'), trigger: 'sometimes' as never }] })).toThrow(
      'unknown trigger "sometimes"',
    );
  });
});

describe('defineWorkflow refuses malformed task fields', () => {
  const run = () => {};
  const cases: Array<[string, Partial<TaskDefinition> & Record<string, unknown>, RegExp]> = [
    [
      'retry.maxAttempts NaN',
      { retry: { maxAttempts: Number.NaN } },
      /"t" retry\.maxAttempts must be a positive integer/,
    ],
    ['retry.maxAttempts negative', { retry: { maxAttempts: -5 } }, /retry\.maxAttempts/],
    ['retry.maxAttempts non-integer', { retry: { maxAttempts: 2.5 } }, /retry\.maxAttempts/],
    ['retry.maxAttempts 0', { retry: { maxAttempts: 0 } }, /retry\.maxAttempts/],
    ['timeoutMs -1', { timeoutMs: -1 }, /"t" timeoutMs must be a positive integer/],
    ['timeoutMs NaN', { timeoutMs: Number.NaN }, /timeoutMs/],
    ['timeoutMs 0', { timeoutMs: 0 }, /timeoutMs/],
    ['retry.initialDelayMs NaN', { retry: { initialDelayMs: Number.NaN } }, /retry\.initialDelayMs/],
    ['retry.initialDelayMs negative', { retry: { initialDelayMs: -1 } }, /retry\.initialDelayMs/],
    ['retry.maxDelayMs NaN', { retry: { maxDelayMs: Number.NaN } }, /retry\.maxDelayMs/],
    ['retry.maxDelayMs negative', { retry: { maxDelayMs: -10 } }, /retry\.maxDelayMs/],
    [
      'retry.backoff unknown',
      { retry: { backoff: 'bogus' as 'fixed' } },
      /retry\.backoff must be one of fixed, linear, exponential, got "bogus"/,
    ],
    ['retry not an object', { retry: 3 as never }, /"t" retry must be an object/],
    ['dependsOn a string', { dependsOn: 'a' as never }, /"t" dependsOn must be an array of task ids/],
    ['dependsOn with a number', { dependsOn: [1] as never }, /dependsOn/],
    ['trigger unknown', { trigger: 'sometimes' as never }, /"t" has unknown trigger "sometimes"/],
    ['when not a function', { when: true as never }, /"t" when must be a function/],
    ['run not a function', { run: 'go' as never }, /"t" has no run function/],
    ['retry.retryOn not a function', { retry: { retryOn: 'always' as never } }, /retry\.retryOn must be a function/],
    ['retry.jitter not a boolean', { retry: { jitter: 'yes' as never } }, /retry\.jitter must be true or false/],
  ];

  it.each(cases)('%s', (_title, fields, message) => {
    const define = () =>
      defineWorkflow({
        name: 'w',
        tasks: [
          { id: 'a', run },
          { id: 't', dependsOn: ['a'], run, ...fields },
        ],
      });
    expect(define).toThrow(WorkflowValidationError);
    expect(define).toThrow(message);
  });

  it('accepts Infinity as a task timeout (no time limit) and gives it its own version', () => {
    const none = defineWorkflow({ name: 'w', tasks: [{ id: 't', timeoutMs: Number.POSITIVE_INFINITY, run }] });
    const own = defineWorkflow({ name: 'w', tasks: [{ id: 't', run }] });
    expect(none.taskById.get('t')?.timeoutMs).toBe(Number.POSITIVE_INFINITY);
    expect(none.version).not.toBe(own.version);
  });

  it('accepts well-formed retry policies and long timeouts', () => {
    const wf = defineWorkflow({
      name: 'w',
      tasks: [
        {
          id: 't',
          timeoutMs: 30 * 86_400_000,
          retry: {
            maxAttempts: 1,
            backoff: 'linear',
            initialDelayMs: 0,
            maxDelayMs: 0,
            jitter: false,
            retryOn: () => true,
          },
          run,
        },
      ],
    });
    expect(wf.tasks).toHaveLength(1);
  });

  it('refuses a workflow name or description with a NUL character', () => {
    expect(() => defineWorkflow({ name: 'bad\u0000name', tasks: [{ id: 't', run }] })).toThrow(WorkflowValidationError);
    expect(() => defineWorkflow({ name: 'bad\u0000name', tasks: [{ id: 't', run }] })).toThrow(/NUL character/);
    expect(() => defineWorkflow({ name: 'w', description: 'd\u0000', tasks: [{ id: 't', run }] })).toThrow(
      WorkflowValidationError,
    );
  });
});
