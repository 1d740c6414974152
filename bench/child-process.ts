/**
 * The Node flags of a bench's child process: TypeScript sources through tsx, as the benches
 * themselves run, and a CPU profile in BENCH_CPU_PROF when that names a folder.
 */
export function childExecArgv(): string[] {
  const profile = process.env.BENCH_CPU_PROF;
  return ['--import', 'tsx', '--conditions=source', ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [])];
}
