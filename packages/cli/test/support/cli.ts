import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { runCli } from '../../src/program.js';

/** The repository root: tsx resolves from here, and so do the workspace packages. */
export const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

/** The fixture module of workflows, as an absolute path (the CLI resolves paths from its working directory). */
export const FIXTURE_WORKFLOWS = fileURLToPath(new URL('../fixtures/workflows.ts', import.meta.url));

/** What a finished `orrery` process left behind. */
export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Options of {@link orrery}: extra environment variables (ORRERY_* are cleared otherwise). */
export interface CliRunOptions {
  env?: Record<string, string>;
}

/** Arguments and environment that run the real CLI from its TypeScript source. */
function command(args: readonly string[], options: CliRunOptions): { argv: string[]; env: NodeJS.ProcessEnv } {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  for (const key of Object.keys(env))
    if (key.startsWith('ORRERY_') && key !== 'ORRERY_TEST_POSTGRES_URL') delete env[key];
  Object.assign(env, options.env);
  return { argv: ['--import', 'tsx', '--conditions=source', MAIN, ...args], env };
}

/** Runs `orrery <args>` to completion. */
export function orrery(args: readonly string[], options: CliRunOptions = {}): CliRun {
  const { argv, env } = command(args, options);
  const run = spawnSync(process.execPath, argv, { cwd: REPO_ROOT, env, encoding: 'utf8', timeout: 60_000 });
  if (run.error) throw run.error;
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/**
 * Runs `orrery <args>` in this test process through `runCli`, the function `main.ts` awaits: the
 * same commands, output and exit code without starting a process (about a second of loading the
 * TypeScript sources per call, which made a file of 80 calls the suite's slowest). For tests of
 * what the commands do; what the process does (streams, signals, exit) is tested through {@link orrery}.
 * The environment is the one {@link orrery} gives its process, set for the call and restored after.
 */
export async function orreryInProcess(args: readonly string[], options: CliRunOptions = {}): Promise<CliRun> {
  const saved = { ...process.env };
  const { env } = command(args, options);
  for (const key of Object.keys(process.env)) if (!(key in env)) delete process.env[key];
  Object.assign(process.env, env);
  let stdout = '';
  let stderr = '';
  try {
    const status = await runCli(args, {
      stdout: (text) => {
        stdout += text;
      },
      stderr: (text) => {
        stderr += text;
      },
    });
    return { status, stdout, stderr };
  } finally {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  }
}

/** {@link orreryInProcess} with `--json`: expects success, and parses stdout. */
export async function orreryInProcessJson<T = unknown>(
  args: readonly string[],
  options: CliRunOptions = {},
): Promise<T> {
  return parseJsonRun<T>(args, await orreryInProcess([...args, '--json'], options));
}

function parseJsonRun<T>(args: readonly string[], run: CliRun): T {
  if (run.status !== 0) {
    throw new Error(`orrery ${args.join(' ')} --json exited ${run.status}: ${run.stderr}`);
  }
  return JSON.parse(run.stdout) as T;
}

/** Runs `orrery <args> --json`, expects success, and parses stdout. */
export function orreryJson<T = unknown>(args: readonly string[], options: CliRunOptions = {}): T {
  return parseJsonRun<T>(args, orrery([...args, '--json'], options));
}

/** Starts `orrery <args>` in the background, for long-running commands (worker). */
export function startOrrery(args: readonly string[], options: CliRunOptions = {}): ChildProcess {
  const { argv, env } = command(args, options);
  return spawn(process.execPath, argv, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * Expects a failed run: the exit code, and exactly one line on stderr starting `error:`
 * and containing `fragment`. Returns that line.
 */
export function expectOneLineError(run: CliRun, exitCode: number, fragment: string | RegExp): string {
  const lines = run.stderr.split('\n').filter((line) => line.trim() !== '');
  const problems: string[] = [];
  if (run.status !== exitCode) problems.push(`exit code ${run.status}, expected ${exitCode}`);
  if (lines.length !== 1) problems.push(`${lines.length} stderr lines, expected 1`);
  const line = lines[0] ?? '';
  if (!line.startsWith('error: ')) problems.push('stderr does not start with "error: "');
  const matches = typeof fragment === 'string' ? line.includes(fragment) : fragment.test(line);
  if (!matches) problems.push(`stderr does not mention ${String(fragment)}`);
  if (problems.length > 0) throw new Error(`${problems.join('; ')}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
  return line;
}
