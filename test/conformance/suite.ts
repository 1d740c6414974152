import { describe } from 'vitest';
import { describeConcurrentClaims } from './concurrency.suite.js';
import { describeCronLedger } from './cron-ledger.suite.js';
import { describeCronSchedules } from './cron-schedules.suite.js';
import { describeDataIntegrity } from './data-integrity.suite.js';
import { describeEdgeInput } from './edge-input.suite.js';
import { describeExecutionStore } from './execution-store.suite.js';
import type { ConformanceOptions, OpenStorage } from './fixtures.js';
import { describeFlowControl } from './flow-control.suite.js';
import { describeMapTasks } from './map-tasks.suite.js';
import { describeOperations } from './operations.suite.js';
import { describeRunnerStore } from './runner-store.suite.js';
import { describeWorkflowStore } from './workflow-store.suite.js';

export type { ConformanceOptions, OpenedStorage, OpenStorage } from './fixtures.js';

/**
 * Registers the storage conformance suite for one adapter: the contract of every port
 * method, column round trips, constraints, atomic units of work and, with
 * `concurrentClaims`, claims racing from two connections. `open` must return a fresh,
 * empty, migrated database each time it is called.
 * @throws Error at registration when `concurrentClaims` is set without `openSecond`.
 */
export function describeStorageConformance(name: string, open: OpenStorage, options: ConformanceOptions): void {
  if (options.concurrentClaims && options.openSecond === undefined) {
    throw new Error(`Conformance suite "${name}": concurrentClaims needs openSecond to open a second storage.`);
  }
  describe(`storage conformance: ${name}`, () => {
    describeExecutionStore(open);
    describeCronSchedules(open);
    describeCronLedger(open);
    describeRunnerStore(open);
    describeWorkflowStore(open);
    describeDataIntegrity(open);
    describeEdgeInput(open);
    describeOperations(open);
    describeFlowControl(open, options.concurrentClaims ? options.openSecond : undefined);
    describeMapTasks(open, options.concurrentClaims ? options.openSecond : undefined);
    if (options.concurrentClaims && options.openSecond !== undefined)
      describeConcurrentClaims(open, options.openSecond);
  });
}
