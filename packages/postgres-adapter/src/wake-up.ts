import { type Logger, type PipelineStatus, WAKE_UP_CHANNEL_PREFIX, type WakeUp, type WakeUps } from '@orreryjs/core';
import pg from 'pg';

/** First pause before reconnecting a lost listen connection; doubles per failed attempt. */
const FIRST_RECONNECT_MS = 100;
/** Cap on that pause: polling covers the gap, so a long outage costs latency, never work. */
const MAX_RECONNECT_MS = 10_000;
/** Suffix of the listen connection's `application_name`, to tell it apart in `pg_stat_activity`. */
const LISTEN_SUFFIX = ':listen';
const MAX_APPLICATION_NAME = 63;

/** Settings of {@link PostgresWakeUps}. */
export interface PostgresWakeUpsOptions {
  /** Where to LISTEN: the storage's URL, or `listen.database` when that one goes through a transaction pooler. */
  connectionString: string;
  /** The tenant schema; its channel is `orrery.<schema>` (the triggers of migration 0002 notify it). */
  schema: string;
  /** The storage's `application_name`; the listen connection's is this plus `:listen`. */
  applicationName: string;
  connectionTimeoutMs: number;
  logger: Logger;
}

/** The listen connection's `application_name`: `<applicationName>:listen`, cut to what Postgres keeps. */
export function listenApplicationName(applicationName: string): string {
  return `${applicationName.slice(0, MAX_APPLICATION_NAME - LISTEN_SUFFIX.length)}${LISTEN_SUFFIX}`;
}

/** A notification's payload as a {@link WakeUp}; null for one this version does not know. */
export function parseWakeUp(payload: string | undefined): WakeUp | null {
  const [kind, first, second, ...rest] = (payload ?? '').split(':');
  if (kind === 'task' && first !== undefined) {
    const ms = Number(first);
    // 'task:<ms>:<workflow name>' since migration 0015; the name may hold colons, and is never empty.
    const workflowName = [second ?? '', ...rest].join(':');
    const named = workflowName === '' ? {} : { workflowName };
    if (first !== '' && Number.isFinite(ms)) return { kind: 'tasks', availableAt: new Date(ms), ...named };
  }
  if (kind === 'pipeline' && first !== undefined && second !== undefined) {
    return { kind: 'pipeline', status: first as PipelineStatus, id: second };
  }
  if (kind === 'schedule' && first !== undefined) {
    const ms = Number(first);
    if (first !== '' && Number.isFinite(ms)) return { kind: 'schedule', nextRunAt: new Date(ms) };
  }
  return null;
}

/**
 * Cross-process wake-ups on PostgreSQL: one dedicated connection (not from the pool, which
 * would hand it to queries and drop its LISTEN) listens on the schema's channel while someone
 * subscribes, and every notification goes to the subscribers. A process that only starts work
 * (a web server's client, which subscribes at its first wait) is woken by none of the schema's
 * notifications: every listener is signalled, and its connection's backend woken, for each
 * one. A lost connection is re-established with a capped exponential back-off. Each time the
 * LISTEN takes effect (the first subscriber, a reconnect) every subscriber gets
 * `{ kind: 'all' }`, since a notification may have been missed before it. Polling is the
 * fallback throughout.
 */
export class PostgresWakeUps implements WakeUps {
  readonly #options: PostgresWakeUpsOptions;
  readonly #channel: string;
  readonly #listeners = new Set<(wakeUp: WakeUp) => void>();
  #client: pg.Client | undefined;
  /** Whether {@link #client} LISTENs (or has been asked to): while there are subscribers. */
  #listening = false;
  /** Clients whose connection ended, possibly before they became {@link #client}. */
  readonly #ended = new WeakSet<pg.Client>();
  #failures = 0;
  #cancelRetry: (() => void) | undefined;
  #closed = false;

  constructor(options: PostgresWakeUpsOptions) {
    this.#options = options;
    this.#channel = `${WAKE_UP_CHANNEL_PREFIX}${options.schema}`;
  }

  /**
   * Opens the listen connection once, for `open…Storage`: a failure here is a configuration
   * to fix (the pool just connected), so it is thrown rather than retried.
   */
  async start(): Promise<void> {
    const client = await this.#connect();
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#use(client);
  }

  subscribe(listener: (wakeUp: WakeUp) => void): () => void {
    this.#listeners.add(listener);
    this.#listenWhileSubscribed();
    return () => {
      this.#listeners.delete(listener);
      this.#listenWhileSubscribed();
    };
  }

  /** Stops listening and reconnecting; idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#cancelRetry?.();
    this.#listeners.clear();
    const client = this.#client;
    this.#client = undefined;
    if (client === undefined) return;
    // Held again while it closes: an unref'd socket would let the process exit with the close pending.
    socketOf(client)?.ref?.();
    await client.end().catch(() => undefined);
  }

  /** A connected client, not listening yet; its failures after this are reported to #lost. */
  async #connect(): Promise<pg.Client> {
    const { connectionString, applicationName, connectionTimeoutMs } = this.#options;
    const client = new pg.Client({
      connectionString,
      application_name: listenApplicationName(applicationName),
      connectionTimeoutMillis: connectionTimeoutMs,
      keepAlive: true,
    });
    // Without an 'error' listener, a dropped connection would crash the process.
    client.on('error', (error) => this.#lost(client, error));
    client.on('end', () => this.#lost(client, undefined));
    client.on('notification', (message) => {
      if (message.channel !== this.#channel) return;
      const wakeUp = parseWakeUp(message.payload);
      if (wakeUp !== null) this.#dispatch(wakeUp);
    });
    try {
      await client.connect();
      // Listening alone must not keep a process alive: a script that never closes its storage
      // exits once its own work is done (its waiters and loops hold the event loop while they wait).
      unrefSocket(client);
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
    return client;
  }

  /** Makes a connected client the listen connection, LISTENing if there are subscribers. */
  #use(client: pg.Client): void {
    this.#client = client;
    this.#listening = false;
    if (this.#ended.has(client)) this.#lost(client, undefined);
    else this.#listenWhileSubscribed();
  }

  /**
   * LISTENs while there are subscribers and UNLISTENs once there are none. The statements queue
   * on the connection in the order they are asked for, so the last one decides. Once a LISTEN
   * has taken effect every subscriber is woken once: what was committed before it notified no one.
   */
  #listenWhileSubscribed(): void {
    const client = this.#client;
    const subscribed = this.#listeners.size > 0;
    if (client === undefined || this.#closed || subscribed === this.#listening) return;
    this.#listening = subscribed;
    // The channel is a quoted identifier; the schema name was validated (≤ 56 characters of [a-z0-9_]).
    const command = `${subscribed ? 'LISTEN' : 'UNLISTEN'} "${this.#channel}"`;
    client.query(command).then(
      () => {
        if (subscribed && client === this.#client) this.#dispatch({ kind: 'all' });
      },
      (error: unknown) => this.#lost(client, error),
    );
  }

  #lost(client: pg.Client, error: unknown): void {
    this.#ended.add(client);
    if (client !== this.#client || this.#closed) return;
    this.#client = undefined;
    void client.end().catch(() => undefined);
    this.#options.logger.warn(
      { err: error, channel: this.#channel },
      'lost the LISTEN connection; reconnecting (polling meanwhile)',
    );
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#closed) return;
    const delayMs = Math.min(FIRST_RECONNECT_MS * 2 ** this.#failures, MAX_RECONNECT_MS);
    this.#failures += 1;
    const timer = setTimeout(() => void this.#reconnect(), delayMs);
    // Polling keeps the process's work going; a pending reconnect must not keep a finished process alive.
    timer.unref();
    this.#cancelRetry = () => clearTimeout(timer);
  }

  async #reconnect(): Promise<void> {
    this.#cancelRetry = undefined;
    let client: pg.Client;
    try {
      client = await this.#connect();
    } catch (error) {
      this.#options.logger.warn({ err: error, channel: this.#channel }, 'could not re-establish the LISTEN connection');
      this.#scheduleReconnect();
      return;
    }
    if (this.#closed) {
      await client.end().catch(() => undefined);
      return;
    }
    // Work committed while the connection was down notified no one: its LISTEN wakes everything once.
    this.#use(client);
    if (this.#client !== client) return;
    this.#failures = 0;
    this.#options.logger.info({ channel: this.#channel }, 'LISTEN connection re-established');
  }

  #dispatch(wakeUp: WakeUp): void {
    for (const listener of this.#listeners) {
      try {
        listener(wakeUp);
      } catch (error) {
        this.#options.logger.error({ err: error, wakeUp }, 'wake-up listener threw');
      }
    }
  }
}

/** pg keeps the client's socket as `connection.stream`, untyped in @types/pg. */
function socketOf(client: pg.Client): { ref?: () => void; unref?: () => void } | undefined {
  return (client as unknown as { connection?: { stream?: { ref?: () => void; unref?: () => void } } }).connection
    ?.stream;
}

function unrefSocket(client: pg.Client): void {
  socketOf(client)?.unref?.();
}
