import { SHUTDOWN_TIMEOUT_MS } from '@orreryjs/runner';
import { describe, expect, it } from 'vitest';
import { expectOneLineError, orreryInProcess } from './support/cli.js';

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
  it.each(COMMANDS.map((c) => [c.join(' ') || '(root)', c]))('documents %s and exits 0', async (_name, command) => {
    const run = await orreryInProcess([...command, '--help']);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^Usage: orrery${command.map((c) => ` ${c}`).join('')} `));
    expect(run.stderr).toBe('');
  });

  it('lists every command group in the root help', async () => {
    const run = await orreryInProcess(['--help']);
    for (const name of ['migrate', 'schedules', 'executions', 'stats', 'next', 'worker'])
      expect(run.stdout).toContain(name);
    expect(run.stdout).toContain('ORRERY_DATABASE_URL');
  });

  it('offers --json on every command that prints a result', async () => {
    for (const command of COMMANDS.filter(
      (c) => c.length > 0 && !(c.length === 1 && ['schedules', 'executions'].includes(c[0]!)),
    )) {
      expect((await orreryInProcess([...command, '--help'])).stdout, command.join(' ')).toContain('--json');
    }
  });

  it('documents every schedule field on add and update, with each choice and its default', async () => {
    for (const verb of ['add', 'update']) {
      const help = (await orreryInProcess(['schedules', verb, '--help'])).stdout;
      for (const flag of ['--overlap', '--pause-on-failure', '--no-pause-on-failure', '--max-runs', '--dst', '--note'])
        expect(help, verb).toContain(flag);
      for (const policy of ['allow', 'skip', 'buffer_one', 'buffer_all', 'cancel_other'])
        expect(help, verb).toMatch(new RegExp(`^  ${policy} +\\S`, 'm'));
      expect(help, verb).toContain('repeated=first,gap=shift for a fixed hour');
    }
    expect((await orreryInProcess(['schedules', 'update', '--help'])).stdout).toContain('--no-max-runs');
    expect((await orreryInProcess(['schedules', 'pause', '--help'])).stdout).toContain('--note');
  });

  it("shows the worker's durations as durations, the default being the runner's", async () => {
    const help = (await orreryInProcess(['worker', '--help'])).stdout;
    expect(help).toMatch(
      /--shutdown-timeout <duration>\s+on a signal, [^(]+\(e\.g\. 90s, 5m; default 30s, the runner's\)/,
    );
    expect(help).not.toMatch(/default: \d{4,}/);
    // The help states the runner's default, which the worker uses when the flag is absent.
    expect(SHUTDOWN_TIMEOUT_MS).toBe(30_000);
  });

  it("describes the dashboard's --json as what it prints, not a table it has none of", async () => {
    const help = (await orreryInProcess(['dashboard', '--help'])).stdout;
    expect(help).toMatch(/--json\s+print the address as one JSON document/);
    expect(help).not.toContain('instead of a table');
  });

  it('describes every kind of cron expression on add and next', async () => {
    for (const command of [['schedules', 'add'], ['next']]) {
      const help = (await orreryInProcess([...command, '--help'])).stdout.replace(/\s+/g, ' ');
      for (const kind of ['7 with a year last', 'Quartz L W # ?', '@every 90s'])
        expect(help, command.join(' ')).toContain(kind);
    }
  });

  it('refuses an unknown command in one line with a suggestion, exit code 2', async () => {
    expectOneLineError(await orreryInProcess(['schedule', 'list']), 2, 'Did you mean schedules?');
  });

  it('refuses an unknown option in one line, exit code 2', async () => {
    expectOneLineError(await orreryInProcess(['stats', '--frobnicate']), 2, "unknown option '--frobnicate'");
  });
});
