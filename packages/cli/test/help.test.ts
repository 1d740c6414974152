import { SHUTDOWN_TIMEOUT_MS } from '@orreryjs/runner';
import { describe, expect, it } from 'vitest';
import { expectOneLineError, orrery } from './support/cli.js';

const COMMANDS = [
  [],
  ['migrate'],
  ['schedules'],
  ...['list', 'show', 'add', 'apply', 'pause', 'resume', 'update', 'delete', 'trigger', 'backfill', 'history'].map(
    (c) => ['schedules', c],
  ),
  ['executions'],
  ['executions', 'list'],
  ['executions', 'show'],
  ['executions', 'retry'],
  ['executions', 'signal'],
  ['workflows'],
  ['workflows', 'list'],
  ['workflows', 'groups'],
  ['stats'],
  ['next'],
  ['worker'],
];

describe('orrery --help', () => {
  it.each(COMMANDS.map((c) => [c.join(' ') || '(root)', c]))('documents %s and exits 0', (_name, command) => {
    const run = orrery([...command, '--help']);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^Usage: orrery${command.map((c) => ` ${c}`).join('')} `));
    expect(run.stderr).toBe('');
  });

  it('lists every command group in the root help', () => {
    const run = orrery(['--help']);
    for (const name of ['migrate', 'schedules', 'executions', 'stats', 'next', 'worker'])
      expect(run.stdout).toContain(name);
    expect(run.stdout).toContain('ORRERY_DATABASE_URL');
  });

  it('offers --json on every command that prints a result', () => {
    for (const command of COMMANDS.filter(
      (c) => c.length > 0 && !(c.length === 1 && ['schedules', 'executions'].includes(c[0]!)),
    )) {
      expect(orrery([...command, '--help']).stdout, command.join(' ')).toContain('--json');
    }
  });

  it('documents every schedule field on add and update, with each choice and its default', () => {
    for (const verb of ['add', 'update']) {
      const help = orrery(['schedules', verb, '--help']).stdout;
      for (const flag of ['--overlap', '--pause-on-failure', '--no-pause-on-failure', '--max-runs', '--dst', '--note'])
        expect(help, verb).toContain(flag);
      for (const policy of ['allow', 'skip', 'buffer_one', 'buffer_all', 'cancel_other'])
        expect(help, verb).toMatch(new RegExp(`^  ${policy} +\\S`, 'm'));
      expect(help, verb).toContain('repeated=first,gap=shift for a fixed hour');
    }
    expect(orrery(['schedules', 'update', '--help']).stdout).toContain('--no-max-runs');
    expect(orrery(['schedules', 'pause', '--help']).stdout).toContain('--note');
  });

  it("shows the worker's durations as durations, the default being the runner's", () => {
    const help = orrery(['worker', '--help']).stdout;
    expect(help).toMatch(
      /--shutdown-timeout <duration>\s+on a signal, [^(]+\(e\.g\. 90s, 5m; default 30s, the runner's\)/,
    );
    expect(help).not.toMatch(/default: \d{4,}/);
    // The help states the runner's default, which the worker uses when the flag is absent.
    expect(SHUTDOWN_TIMEOUT_MS).toBe(30_000);
  });

  it("describes the dashboard's --json as what it prints, not a table it has none of", () => {
    const help = orrery(['dashboard', '--help']).stdout;
    expect(help).toMatch(/--json\s+print the address as one JSON document/);
    expect(help).not.toContain('instead of a table');
  });

  it('describes every kind of cron expression on add and next', () => {
    for (const command of [['schedules', 'add'], ['next']]) {
      const help = orrery([...command, '--help']).stdout.replace(/\s+/g, ' ');
      for (const kind of ['7 with a year last', 'Quartz L W # ?', '@every 90s'])
        expect(help, command.join(' ')).toContain(kind);
    }
  });

  it('refuses an unknown command in one line with a suggestion, exit code 2', () => {
    expectOneLineError(orrery(['schedule', 'list']), 2, 'Did you mean schedules?');
  });

  it('refuses an unknown option in one line, exit code 2', () => {
    expectOneLineError(orrery(['stats', '--frobnicate']), 2, "unknown option '--frobnicate'");
  });
});
