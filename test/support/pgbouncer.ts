import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where Debian puts the binary. */
const PGBOUNCER_BINARIES = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'];
const INSTALL_SCRIPT = resolve(fileURLToPath(new URL('../../.ci/install-pgbouncer', import.meta.url)));
const READY_TIMEOUT_MS = 15_000;

/** A PgBouncer this process started, in front of the test server. */
export interface RunningPgbouncer {
  /** The test server's URL with host and port replaced by PgBouncer's. */
  url: string;
  stop(): Promise<void>;
}

function findBinary(): string | undefined {
  return PGBOUNCER_BINARIES.find((path) => existsSync(path));
}

/** The pgbouncer binary, installed by the project's script when missing. Throws when it cannot be had. */
function ensureBinary(): string {
  const found = findBinary();
  if (found !== undefined) return found;
  try {
    execFileSync(INSTALL_SCRIPT, { stdio: ['ignore', 'inherit', 'pipe'] });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(
      `PgBouncer is required by the test suite and ${INSTALL_SCRIPT} could not install it${stderr ? `: ${stderr}` : ''}. Install it with apt-get install -y pgbouncer.`,
    );
  }
  const installed = findBinary();
  if (installed === undefined) throw new Error(`${INSTALL_SCRIPT} ran but no pgbouncer binary is in /usr/sbin.`);
  return installed;
}

/** A TCP port nothing listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolvePort(address.port) : reject()));
    });
  });
}

/**
 * Starts Debian's PgBouncer in `pool_mode = transaction` in front of the server at `postgresUrl`,
 * with a generated ini in a temp dir, trust auth and a free port. It refuses to run as root, so
 * under root it runs as the `postgres` OS user. Resolves once it answers `ready`.
 * @throws Error when pgbouncer cannot be installed or does not come up, with its log.
 */
export async function startPgbouncer(
  postgresUrl: string,
  ready: (url: string) => Promise<boolean>,
): Promise<RunningPgbouncer> {
  const binary = ensureBinary();
  const server = new URL(postgresUrl);
  const user = decodeURIComponent(server.username || 'postgres');
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'orrery-pgbouncer-'));
  chmodSync(dir, 0o777);
  const ini = join(dir, 'pgbouncer.ini');
  const log = join(dir, 'pgbouncer.log');
  const pidfile = join(dir, 'pgbouncer.pid');
  // Clients are trusted; the password (if the URL has one) is what PgBouncer logs in to the server with.
  const password = decodeURIComponent(server.password).replaceAll('"', '""');
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" "${password}"\n`, { mode: 0o644 });
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || '5432'}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      'pool_mode = transaction',
      'max_client_conn = 500',
      'default_pool_size = 10',
      `logfile = ${log}`,
      `pidfile = ${pidfile}`,
      '',
    ].join('\n'),
    { mode: 0o644 },
  );
  const isRoot = process.getuid?.() === 0;
  const [file, args] = isRoot ? ['runuser', ['-u', 'postgres', '--', binary, ini]] : [binary, [ini]];
  const child = spawn(file, args, { stdio: 'ignore' });
  let exited: string | undefined;
  child.once('exit', (code, signal) => {
    exited = `exited with ${signal ?? code}`;
  });
  const url = new URL(postgresUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  const stop = async () => {
    // The pid pgbouncer wrote is the one process this function started under runuser.
    const pid = existsSync(pidfile) ? Number(readFileSync(pidfile, 'utf8').trim()) : undefined;
    if (pid !== undefined && Number.isInteger(pid) && pid > 0) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // Already gone.
      }
    }
    if (exited === undefined) {
      await new Promise<void>((done) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          done();
        }, 5_000);
        child.once('exit', () => {
          clearTimeout(timer);
          done();
        });
      });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (!(await ready(url.toString()))) {
    if (exited !== undefined || Date.now() > deadline) {
      const output = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').slice(-10).join('\n') : '';
      await stop();
      throw new Error(
        `PgBouncer (${binary}) did not come up on 127.0.0.1:${port}${exited === undefined ? '' : ` (${exited})`}: ${output}`,
      );
    }
    await new Promise((wake) => setTimeout(wake, 50));
  }
  return { url: url.toString(), stop };
}
