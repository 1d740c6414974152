import { describe, expect, it } from 'vitest';
import { assertContextSize, Context, ContextError, contextDelta, mergeContext } from '../src/index.js';

describe('Context', () => {
  it('stores and returns copies of JSON values', () => {
    const ctx = new Context({ a: { b: [1, 2] } });
    const value = ctx.get<{ b: number[] }>('a');
    value?.b.push(3);
    expect(ctx.get('a')).toEqual({ b: [1, 2] });
    expect(ctx.set('c', 'x').keys()).toEqual(['a', 'c']);
    expect(ctx.has('c')).toBe(true);
    expect(ctx.delete('c')).toBe(true);
    expect(ctx.delete('c')).toBe(false);
    expect(ctx.toJSON()).toEqual({ a: { b: [1, 2] } });
  });

  it.each([
    ['undefined', undefined, 'a undefined is not JSON'],
    ['a function', () => 1, 'a function is not JSON'],
    ['a BigInt', 10n, 'a bigint is not JSON'],
    ['NaN', Number.NaN, 'NaN is not a finite number'],
    ['Infinity', Number.POSITIVE_INFINITY, 'Infinity is not a finite number'],
    ['a Date', new Date(0), 'a Date instance is not plain JSON'],
    ['a Map', new Map(), 'a Map instance is not plain JSON'],
  ])('refuses %s with a ContextError naming the key', (_label, value, why) => {
    const ctx = new Context();
    expect(() => ctx.set('bad', value as never)).toThrow(ContextError);
    expect(() => ctx.set('bad', value as never)).toThrow(`Context value at "bad" is not JSON: ${why}`);
    expect(ctx.has('bad')).toBe(false);
  });

  it('refuses nested offenders, naming their path', () => {
    const ctx = new Context();
    expect(() => ctx.set('outer', { list: [1, { deep: undefined as never }] })).toThrow(
      'Context value at "outer.list[1].deep" is not JSON',
    );
  });

  it('refuses cycles and __proto__ keys', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const ctx = new Context();
    expect(() => ctx.set('c', cyclic as never)).toThrow('the value contains a cycle');
    const withProto = JSON.parse('{"__proto__": {"polluted": true}}');
    expect(() => ctx.set('p', withProto)).toThrow('the key "__proto__" is not allowed');
    expect(() => ctx.set('__proto__', 1)).toThrow(ContextError);
    expect(() => new Context({ when: new Date() as never })).toThrow(ContextError);
  });

  it('records the keys set and deleted since construction', () => {
    const ctx = new Context({ keep: 1, drop: 2 });
    ctx.set('added', true).delete('drop');
    expect(contextDelta(ctx)).toEqual({ set: { added: true }, deleted: ['drop'] });
    ctx.set('drop', 3);
    expect(contextDelta(ctx)).toEqual({ set: { added: true, drop: 3 }, deleted: [] });
  });
});

describe('mergeContext', () => {
  it('merges objects recursively and replaces arrays, scalars and null, applying deletes', () => {
    const merged = mergeContext({ cfg: { a: 1, b: { c: 2 } }, list: [1], gone: 'x', n: null }, [
      { set: { cfg: { b: { d: 3 } }, list: [2, 3] }, deleted: [] },
      { set: { n: 5, cfg: null }, deleted: ['gone'] },
    ]);
    expect(merged).toEqual({ cfg: null, list: [2, 3], n: 5 });
    expect(mergeContext({ cfg: { a: 1 } }, [{ set: { cfg: { b: 2 } }, deleted: [] }])).toEqual({ cfg: { a: 1, b: 2 } });
  });
});

describe('assertContextSize', () => {
  it('refuses a context over the limit and names the limit', () => {
    expect(() => assertContextSize({ big: 'x'.repeat(100) }, 50, 'Input context')).toThrow(
      /Input context is \d+ bytes serialised, over the limit of 50 \(maxContextBytes\)/,
    );
    expect(() => assertContextSize({ small: 1 }, 50, 'Input context')).not.toThrow();
  });
});
