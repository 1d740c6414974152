/**
 * Every option's `@default` tag must equal the value in its package's DEFAULTS object: the
 * runner's `cron…` defaults are read from CRON_DEFAULTS, but both packages still document
 * each value in TSDoc, so this keeps the documents and the values together.
 */
import { readFileSync } from 'node:fs';
import { DEFAULT_ON_LIMIT } from '@orreryjs/core';
import { CRON_DEFAULTS } from '@orreryjs/cron';
import { RUNNER_DEFAULTS } from '@orreryjs/runner';
import { describe, expect, it } from 'vitest';
import { OTHER_SCHEDULES, SCHEDULE_LABEL_LIMIT } from '../packages/runner/src/metrics.js';
import { OUTRUN_PAUSE_MS } from '../packages/runner/src/worker/claim-loop.js';

const ROOT = new URL('..', import.meta.url);

/** The `@default` of each field of `interfaceName` in `file` that is a plain literal (number, boolean, string). */
function documentedDefaults(file: string, interfaceName: string): Map<string, unknown> {
  const source = readFileSync(new URL(file, ROOT), 'utf8');
  const start = source.indexOf(`export interface ${interfaceName} {`);
  expect(start, `${interfaceName} in ${file}`).toBeGreaterThanOrEqual(0);
  const body = source.slice(start, source.indexOf('\n}\n', start));
  const defaults = new Map<string, unknown>();
  for (const [, doc = '', field = ''] of body.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*(\w+)\??:/g)) {
    const tag = /@default\s+(\S+)/.exec(doc)?.[1];
    if (tag === undefined) continue;
    if (/^[\d_]+$/.test(tag)) defaults.set(field, Number(tag.replaceAll('_', '')));
    else if (tag === 'true' || tag === 'false') defaults.set(field, tag === 'true');
    else if (/^'[^']*'$/.test(tag)) defaults.set(field, tag.slice(1, -1));
  }
  return defaults;
}

describe('documented defaults', () => {
  it('documents every CronSettings field with its CRON_DEFAULTS value', () => {
    const documented = documentedDefaults('packages/cron/src/settings.ts', 'CronSettings');
    expect(Object.fromEntries(documented)).toEqual({ ...CRON_DEFAULTS });
  });

  it('documents each literal default of the runner config with its RUNNER_DEFAULTS value', () => {
    const documented = documentedDefaults('packages/runner/src/config.ts', 'DefaultRunnerConfig');
    const values = RUNNER_DEFAULTS as Readonly<Record<string, unknown>>;
    // Every cron… field and maxContextBytes has a literal default; fields such as pool do not.
    for (const field of ['cronPollIntervalMs', 'cronMaxRecoveryAttempts', 'enableCronScheduling', 'maxContextBytes']) {
      expect(documented.has(field), field).toBe(true);
    }
    for (const [field, value] of documented) expect({ field, value: values[field] }).toEqual({ field, value });
  });

  it('documents the default onLimit of a concurrency rule with DEFAULT_ON_LIMIT', () => {
    const documented = documentedDefaults('packages/core/src/flow-control.ts', 'ConcurrencyRule');
    expect(Object.fromEntries(documented)).toEqual({ onLimit: DEFAULT_ON_LIMIT });
  });

  it('states in the README how many schedules the metrics name, as SCHEDULE_LABEL_LIMIT says', () => {
    const readme = readFileSync(new URL('README.md', ROOT), 'utf8').replaceAll(/\s+/g, ' ');
    expect(readme).toContain(
      `for the first ${SCHEDULE_LABEL_LIMIT.toLocaleString('en-US')} schedules a runner reports on and \`schedule="${OTHER_SCHEDULES}"\``,
    );
  });

  it('states in the README how long a runner outrun on a wake-up leaves the next ones to others, as OUTRUN_PAUSE_MS says', () => {
    const readme = readFileSync(new URL('README.md', ROOT), 'utf8').replaceAll(/\s+/g, ' ');
    expect(readme).toContain(`leaves the next ones to the others for ${OUTRUN_PAUSE_MS} ms`);
  });
});
