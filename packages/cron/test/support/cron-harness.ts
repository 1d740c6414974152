import { type CronStore, ManualClock, type Storage, silentLogger } from '@orreryjs/core';
import { openSqliteStorage } from '@orreryjs/sqlite-adapter';
import { tempSqliteFile } from '../../../../test/support/sqlite.js';
import { CRON_DEFAULTS, type CronEvents, type CronFaults, CronService, type CronSettings } from '../../src/index.js';
import { StorageExecutor } from './storage-executor.js';

/** The instant tests start at: a Thursday, midnight UTC. */
export const T0 = new Date('2026-01-01T00:00:00.000Z');
export const SECOND = 1000;
export const MINUTE = 60 * SECOND;
export const HOUR = 60 * MINUTE;

/** An emitted event, as recorded. */
export type RecordedEvent = { [K in keyof CronEvents]: { name: K; payload: CronEvents[K][0] } }[keyof CronEvents];

/** A CronService on a real SQLite file, with its clock, executor and the events it emitted. */
export interface CronHarness {
  storage: Storage;
  clock: ManualClock;
  executor: StorageExecutor;
  cron: CronService;
  events: RecordedEvent[];
  /** Events of one kind, payloads only. */
  eventsOf<K extends keyof CronEvents>(name: K): CronEvents[K][0][];
  /** Another CronService on the same connection and clock. */
  another(options?: HarnessOptions & { runnerId?: string }): CronHarness;
  /** Another CronService (another "process") on its own connection to the same file, same clock. */
  anotherProcess(options?: HarnessOptions & { runnerId?: string }): Promise<CronHarness>;
  close(): Promise<void>;
}

/** What a harness may change. */
export interface HarnessOptions {
  workflows?: string[];
  settings?: Partial<CronSettings>;
  faults?: CronFaults;
  start?: Date;
}

/** Opens a fresh SQLite database and builds a CronService over it. */
export async function openHarness(options: HarnessOptions = {}): Promise<CronHarness> {
  const file = tempSqliteFile();
  const storage = await openSqliteStorage({ filename: file.filename });
  const clock = new ManualClock(options.start ?? T0);
  const opened: Storage[] = [storage];
  const openProcess = async (more: HarnessOptions & { runnerId?: string }) => {
    const second = await openSqliteStorage({ filename: file.filename });
    opened.push(second);
    return build(second, clock, more.runnerId ?? 'runner-b', { ...options, ...more }, openProcess);
  };
  const harness = build(storage, clock, 'runner-a', options, openProcess);
  const close = harness.close;
  harness.close = async () => {
    await close();
    for (const each of opened) await each.close();
    file.remove();
  };
  return harness;
}

function build(
  storage: Storage,
  clock: ManualClock,
  runnerId: string,
  options: HarnessOptions,
  openProcess: (options: HarnessOptions & { runnerId?: string }) => Promise<CronHarness>,
): CronHarness {
  const workflows = options.workflows ?? ['wf'];
  const executor = new StorageExecutor(storage, clock);
  const events: RecordedEvent[] = [];
  const cron = new CronService({
    store: storage.cron as CronStore,
    executor,
    clock,
    logger: silentLogger,
    runnerId,
    settings: { ...CRON_DEFAULTS, ...options.settings },
    workflows: { has: (name) => workflows.includes(name), names: () => [...workflows] },
    emit: (name, payload) => {
      events.push({ name, payload } as RecordedEvent);
    },
    ...(options.faults === undefined ? {} : { faults: options.faults }),
  });
  return {
    storage,
    clock,
    executor,
    cron,
    events,
    eventsOf: <K extends keyof CronEvents>(name: K) =>
      events.filter((event) => event.name === name).map((event) => event.payload as CronEvents[K][0]),
    another: (more = {}) => build(storage, clock, more.runnerId ?? 'runner-b', { ...options, ...more }, openProcess),
    anotherProcess: (more = {}) => openProcess(more),
    close: () => cron.stop(),
  };
}

/** Every pipeline in the database, oldest first. */
export async function allPipelines(storage: Storage) {
  const rows = await storage.executions.listPipelines({ limit: 100_000, offset: 0 });
  return rows.reverse();
}
