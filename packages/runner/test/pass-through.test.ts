import { describe, expect, it } from 'vitest';
import { CLIENT_CALLS } from '../src/client.js';
import { SCHEDULE_CALLS, ScheduleCalls } from '../src/cron-api.js';
import { DefaultRunner, OrreryClient } from '../src/index.js';
import { passCallsThrough } from '../src/pass-through.js';

/** The public methods a class's prototype defines itself (not inherited ones). */
function ownMethods(prototype: object): string[] {
  return Object.getOwnPropertyNames(prototype).filter(
    (name) => name !== 'constructor' && typeof Object.getOwnPropertyDescriptor(prototype, name)?.value === 'function',
  );
}

describe('passing calls through', () => {
  it('passes arguments, results and errors unchanged, to the part of each instance', async () => {
    class Part {
      constructor(readonly label: string) {}
      greet(name: string, punctuation: string): string {
        return `${this.label}: ${name}${punctuation}`;
      }
      async fail(): Promise<never> {
        throw new RangeError(`${this.label} failed`);
      }
    }
    class Holder {
      readonly part: Part;
      constructor(label: string) {
        this.part = new Part(label);
      }
    }
    passCallsThrough(Holder, (holder) => holder.part, ['greet', 'fail']);
    const first = new Holder('one') as Holder & Pick<Part, 'greet' | 'fail'>;
    const second = new Holder('two') as Holder & Pick<Part, 'greet' | 'fail'>;
    expect(first.greet('Ada', '!')).toBe('one: Ada!');
    expect(second.greet('Bo', '?')).toBe('two: Bo?');
    await expect(second.fail()).rejects.toThrow(new RangeError('two failed'));
  });

  it('gives a client every schedule call, and a runner every client call but close', () => {
    const excluded = new Set(['close', 'closeWith', 'pipelineFinished']);
    expect([...SCHEDULE_CALLS].sort()).toEqual(ownMethods(ScheduleCalls.prototype).sort());
    const clientCalls = ownMethods(OrreryClient.prototype).filter((name) => !excluded.has(name));
    expect([...CLIENT_CALLS].sort()).toEqual(clientCalls.sort());
    for (const name of CLIENT_CALLS) expect(typeof DefaultRunner.prototype[name]).toBe('function');
  });
});
