import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { parseDurationMs, parseInstant } from '../arguments.js';
import {
  type CliIo,
  formatDuration,
  formatInstant,
  type OutputOptions,
  writeJson,
  writeLine,
  writeRecord,
} from '../output.js';
import { type DatabaseOptions, databaseCommand, withClient } from '../runner-session.js';

interface StatsOptions extends DatabaseOptions, OutputOptions {
  since?: Date;
}

/** `orrery stats`: how reliably schedules fired, and how recovery fared. */
export function registerStatsCommand(program: Command, io: CliIo): void {
  databaseCommand(program, 'stats', 'Cron delivery and recovery statistics')
    .option(
      '--since <when>',
      'count occurrences since an ISO-8601 instant, or this long ago (90m, 24h, 7d); default 24h',
      parseSince,
    )
    .action(async (options: StatsOptions) => {
      const { cron, recovery } = await withClient(options, {}, async (client) => ({
        cron: await client.getCronExecutionStats(options.since === undefined ? {} : { since: options.since }),
        recovery: await client.getRecoveryStats(),
      }));
      if (options.json) {
        writeJson(io, { since: options.since ?? null, cron, recovery });
        return;
      }
      writeLine(
        io,
        `Cron occurrences since ${options.since === undefined ? '24 hours ago' : formatInstant(options.since)}:`,
      );
      writeRecord(io, [
        ['Total', cron.totalExecutions],
        ['Handed off', cron.successfulExecutions],
        ['Lost (claimed, not handed off)', cron.lostExecutions],
        ['Skipped (overlap)', cron.skippedExecutions],
        ['Missed', cron.missedExecutions],
        ['Abandoned', cron.abandonedExecutions],
        ['Success rate', percent(cron.successRate)],
        ['Mean delay', formatDuration(cron.meanDelayMs)],
        ['p99 delay', formatDuration(cron.p99DelayMs)],
      ]);
      writeLine(io, 'Recovery:');
      writeRecord(io, [
        ['Attempts', recovery.totalRecoveryAttempts],
        ['Succeeded', recovery.successfulRecoveries],
        ['Failed', recovery.failedRecoveries],
        ['Abandoned', recovery.abandonedRecoveries],
        ['Success rate', percent(recovery.recoverySuccessRate)],
      ]);
    });
}

/** An ISO-8601 instant, or a duration back from now. */
function parseSince(value: string): Date {
  try {
    return parseInstant(value);
  } catch {
    try {
      return new Date(Date.now() - parseDurationMs(value));
    } catch {
      throw new InvalidArgumentError(
        'expected an ISO-8601 instant (2024-05-01T00:00:00Z) or a duration of at most 100 years (90m, 24h, 7d).',
      );
    }
  }
}

/** A rate as a percentage; "—" for null (nothing to rate: no attempts is not 0 %). */
function percent(rate: number | null): string {
  return rate === null ? '—' : `${rate.toFixed(1)}%`;
}
