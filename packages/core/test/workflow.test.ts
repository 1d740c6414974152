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
