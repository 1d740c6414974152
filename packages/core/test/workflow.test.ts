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
    ['notBefore not a function', { notBefore: new Date() as never }, /"t" notBefore must be a function/],
    [
      'rateLimit without a name',
      { rateLimit: { limit: 1, periodMs: 1000 } as never },
      /rateLimit\.name must be a non-empty string/,
    ],
    [
      'rateLimit limit 0',
      { rateLimit: { name: 'api', limit: 0, periodMs: 1000 } },
      /rateLimit\.limit must be an integer from 1 to 1000000/,
    ],
    [
      'rateLimit periodMs 0',
      { rateLimit: { name: 'api', limit: 1, periodMs: 0 } },
      /rateLimit\.periodMs must be an integer of milliseconds/,
    ],
    [
      'rateLimit key not a path',
      { rateLimit: { name: 'api', key: 'a.', limit: 1, periodMs: 1 } },
      /rateLimit\.key must be a context path/,
    ],
    [
      'rateLimit unknown field',
      { rateLimit: { name: 'api', limit: 1, periodMs: 1, burst: 2 } as never },
      /rateLimit has unknown field "burst"/,
    ],
    ['waitFor with a run', { waitFor: { signal: 'go' } }, /has both waitFor and run; a wait task has no run function/],
    ['delayMs 0', { delayMs: 0 }, /"t" delayMs must be a positive integer of milliseconds, at most 31622400000/],
    ['delayMs fractional', { delayMs: 1.5 }, /delayMs/],
    ['delayMs over a year', { delayMs: 366 * 24 * 3_600_000 + 1 }, /delayMs/],
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

describe('defineWorkflow and flow control', () => {
  const run = () => {};
  const tasks = [{ id: 't', run }];

  it('gives a delayed task its own version, and keeps the version of tasks without one', () => {
    const plain = defineWorkflow({ name: 'w', tasks });
    const delayed = defineWorkflow({ name: 'w', tasks: [{ id: 't', run, delayMs: 60_000 }] });
    expect(delayed.taskById.get('t')?.delayMs).toBe(60_000);
    expect(delayed.version).not.toBe(plain.version);
  });

  it('keeps the version of a workflow without rules, and gives rules their own', () => {
    const plain = defineWorkflow({ name: 'w', tasks });
    // The version this workflow had before flow control existed: rules join the hash only when present.
    expect(plain.version).toBe('4ed70bd4dd407337');
    expect(plain).toMatchObject({ concurrency: [], priority: 0 });
    const limited = defineWorkflow({ name: 'w', tasks, concurrency: { key: 'customerId', limit: 2 } });
    expect(limited.concurrency).toEqual([{ key: 'customerId', limit: 2, onLimit: 'queue' }]);
    expect(limited.version).not.toBe(plain.version);
    const urgent = defineWorkflow({ name: 'w', tasks, priority: 5 });
    expect(urgent.priority).toBe(5);
    expect(urgent.version).not.toBe(plain.version);
  });

  it('takes an array of rules, one of them workflow-wide', () => {
    const wf = defineWorkflow({
      name: 'w',
      tasks,
      concurrency: [{ limit: 10 }, { key: 'tenant.id', limit: 1, onLimit: 'cancel_newest' }],
    });
    expect(wf.concurrency).toEqual([
      { limit: 10, onLimit: 'queue' },
      { key: 'tenant.id', limit: 1, onLimit: 'cancel_newest' },
    ]);
  });

  const refused: Array<[string, Record<string, unknown>, RegExp]> = [
    ['limit 0', { concurrency: { limit: 0 } }, /concurrency\.limit must be an integer from 1 to 100000, got 0/],
    ['limit above the range', { concurrency: { limit: 100_001 } }, /concurrency\.limit/],
    ['limit not an integer', { concurrency: { limit: 1.5 } }, /concurrency\.limit/],
    ['a key that is not a path', { concurrency: { key: 'a..b', limit: 1 } }, /concurrency\.key must be a context path/],
    ['an empty key', { concurrency: { key: '', limit: 1 } }, /concurrency\.key/],
    [
      'an unknown onLimit',
      { concurrency: { limit: 1, onLimit: 'drop' } },
      /onLimit must be one of queue, cancel_newest, cancel_in_progress/,
    ],
    ['an unknown rule field', { concurrency: { limit: 1, max: 2 } }, /concurrency has unknown field "max"/],
    ['a rule that is not an object', { concurrency: [3] }, /concurrency\[0\] must be an object/],
    [
      'two rules on one key',
      {
        concurrency: [
          { key: 'k', limit: 1 },
          { key: 'k', limit: 2 },
        ],
      },
      /repeats the key "k"/,
    ],
    ['priority out of range', { priority: 1001 }, /priority must be an integer from -1000 to 1000/],
    ['priority not a number', { priority: 'high' }, /priority must be an integer/],
    [
      'an unknown workflow key',
      { concurency: { limit: 1 } },
      /Unknown workflow "w" key "concurency": did you mean "concurrency"\?/,
    ],
  ];

  it.each(refused)('refuses %s with a WorkflowValidationError', (_title, fields, message) => {
    const define = () => defineWorkflow({ name: 'w', tasks, ...fields } as never);
    expect(define).toThrow(WorkflowValidationError);
    expect(define).toThrow(message);
  });

  it('refuses unknown task and retry keys, naming the nearest', () => {
    expect(() => defineWorkflow({ name: 'w', tasks: [{ id: 't', run, timeout: 5 } as never] })).toThrow(
      /Unknown task "t" key in workflow "w" "timeout": did you mean "timeoutMs"\?/,
    );
    expect(() => defineWorkflow({ name: 'w', tasks: [{ id: 't', run, retry: { attempts: 3 } } as never] })).toThrow(
      /"attempts": did you mean "maxAttempts"\?/,
    );
  });

  it('takes a map function, refuses any other value and a map on a wait task, and versions it', () => {
    const items = () => [1, 2];
    expect(() => defineWorkflow({ name: 'w', tasks: [{ id: 't', run, map: 1 } as never] })).toThrow(
      /task "t" map must be a function \(ctx\) => items/,
    );
    expect(() =>
      defineWorkflow({ name: 'w', tasks: [{ id: 't', waitFor: { signal: 's' }, map: items } as never] }),
    ).toThrow(/task "t" map must be absent on a wait task/);
    const mapped = defineWorkflow({ name: 'w', tasks: [{ id: 't', run, map: items }] });
    expect(mapped.taskById.get('t')?.map).toBe(items);
    expect(mapped.version).not.toBe(defineWorkflow({ name: 'w', tasks: [{ id: 't', run }] }).version);
  });
});
