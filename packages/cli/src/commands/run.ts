import type { Json, PipelineResult } from '@orreryjs/core';
import type { Command } from 'commander';
import { parseDurationMs, parseJsonObject } from '../arguments.js';
import { EXIT, ExitWithCode } from '../failure.js';
import { type CliIo, formatDuration, type OutputOptions, writeJson, writeLine } from '../output.js';
import { type DatabaseOptions, databaseCommand, withClient } from '../runner-session.js';

interface RunOptions extends DatabaseOptions, OutputOptions {
  context?: Record<string, Json>;
  idempotencyKey?: string;
  wait?: boolean;
  timeout?: number;
}

/**
 * `orrery run WORKFLOW`: starts a pipeline of a workflow some runner registered, and with
 * `--wait` waits for a worker to finish it. Exits 1 when the waited-for pipeline failed or was cancelled.
 */
export function registerRunCommand(program: Command, io: CliIo): void {
  databaseCommand(program, 'run', 'Start a pipeline of a workflow (a worker runs it); --wait for its result')
    .argument('<workflow>', 'name of a workflow some runner registered (see `orrery workflows`)')
    .option('--context <json>', 'input context of the pipeline, a JSON object', parseJsonObject)
    .option('--idempotency-key <key>', 'start at most one pipeline per key: a repeat returns the first one')
    .option('--wait', 'wait until the pipeline is completed, failed or cancelled, and print its result')
    .option(
      '--timeout <duration>',
      'with --wait, how long to wait (e.g. 30s, 5m; default 1h, the pipeline timeout); the pipeline keeps running after',
      parseDurationMs,
    )
    .action(async (workflowName: string, options: RunOptions) => {
      const outcome = await withClient(options, {}, async (client) => {
        const execution = await client.executeAsync(workflowName, options.context ?? {}, {
          ...(options.idempotencyKey === undefined ? {} : { idempotencyKey: options.idempotencyKey }),
        });
        if (!options.wait) return { executionId: execution.id, result: undefined };
        const result = await execution.wait(options.timeout === undefined ? {} : { timeoutMs: options.timeout });
        return { executionId: execution.id, result };
      });
      report(io, workflowName, outcome.executionId, outcome.result, options.json);
      if (outcome.result !== undefined && outcome.result.status !== 'completed') throw new ExitWithCode(EXIT.failure);
    });
}

function report(
  io: CliIo,
  workflowName: string,
  executionId: string,
  result: PipelineResult | undefined,
  json: boolean | undefined,
): void {
  if (result === undefined) {
    if (json) writeJson(io, { executionId, workflowName, status: 'pending' });
    else writeLine(io, `Started execution ${executionId} of workflow "${workflowName}": it is queued for a worker.`);
    return;
  }
  if (json) {
    writeJson(io, result);
    return;
  }
  // The first line: the message. The stack follows in `orrery executions show`.
  const error = result.error === undefined ? '' : `: ${result.error.split('\n', 1)[0]}`;
  writeLine(
    io,
    `Execution ${executionId} of workflow "${workflowName}" ${result.status} in ${formatDuration(result.durationMs)}${error}. Details: orrery executions show ${executionId}`,
  );
}
