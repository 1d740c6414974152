import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** A PostgreSQL cluster of a test's own, in a temp directory: safe to restart or stop at will. */
export interface ThrowawayCluster {
  /** `postgres://postgres@127.0.0.1:<port>/test` (trust auth). */
  readonly url: string;
  readonly port: number;
  /** `pg_ctl restart -m fast`: every connection is dropped, and the server is back when it resolves. */
  restart(): Promise<void>;
  /** Stops the server and deletes its directory. */
  stop(): Promise<void>;
}

/**
 * Creates and starts a cluster on `port` (a free one when omitted) with a `test` database,
 * using the newest server binaries under /usr/lib/postgresql. initdb refuses root, so when
 * run as root the cluster is created and run as the `postgres` OS user.
 * @throws Error when no server binaries are installed or a step fails.
 */
export async function startThrowawayCluster(port?: number): Promise<ThrowawayCluster> {
  const chosenPort = port ?? (await freePort());
  const bin = findPostgresBin();
  const dir = mkdtempSync(join(tmpdir(), 'orrery-pg-'));
  chmodSync(dir, 0o777);
  const data = join(dir, 'data');
  const pgCtl = (...args: string[]) => asPostgres(join(bin, 'pg_ctl'), ['-D', data, ...args]);
  asPostgres(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  pgCtl(
    '-l',
    join(dir, 'log'),
    '-w',
    '-o',
    `-p ${chosenPort} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
    'start',
  );
  asPostgres(join(bin, 'createdb'), ['-h', '127.0.0.1', '-p', String(chosenPort), '-U', 'postgres', 'test']);
  return {
    url: `postgres://postgres@127.0.0.1:${chosenPort}/test`,
    port: chosenPort,
    // pg_ctl restart starts the server again with the options it was started with (postmaster.opts).
    restart: async () => {
      const [file, argv] = commandAsPostgres(join(bin, 'pg_ctl'), [
        '-D',
        data,
        '-l',
        join(dir, 'log'),
        '-w',
        '-m',
        'fast',
        'restart',
      ]);
      await promisify(execFile)(file, argv);
    },
    stop: async () => {
      const [file, argv] = commandAsPostgres(join(bin, 'pg_ctl'), ['-D', data, '-m', 'fast', 'stop']);
      spawnSync(file, argv);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function commandAsPostgres(cmd: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
}

function asPostgres(cmd: string, args: string[]): void {
  const [file, argv] = commandAsPostgres(cmd, args);
  execFileSync(file, argv, { stdio: 'pipe' });
}

/** A TCP port nothing listens on right now. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function findPostgresBin(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort().reverse() : [];
  const found = versions.map((v) => join(root, v, 'bin')).find((d) => existsSync(join(d, 'initdb')));
  if (found === undefined)
    throw new Error('No PostgreSQL server binaries under /usr/lib/postgresql; install postgresql-15.');
  return found;
}
