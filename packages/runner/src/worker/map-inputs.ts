import {
  type ClaimedTask,
  type ExecutionStore,
  type JsonObject,
  type TaskRow,
  TERMINAL_TASK_STATUSES,
  type Workflow,
} from '@orreryjs/core';
import { taskInput } from './task-input.js';

/** Mappings whose input a process keeps; the oldest goes first past it (a map's instances run close together). */
const MAX_KEPT_MAPPINGS = 256;

const TERMINAL: ReadonlySet<string> = new Set(TERMINAL_TASK_STATUSES);

/**
 * The input of map tasks' instances: every instance of one mapping reads the same context (its
 * task's), so this process reads it once per (pipeline, map task, attempt that mapped it) — the
 * claim leaves it out for instances, where it would read every instance row of the pipeline on
 * each claim (see core's map.ts). A retried map task maps under a later attempt, so a context
 * its ancestors changed since is never served from here.
 */
export class MapInputs {
  readonly #store: ExecutionStore;
  readonly #inputs = new Map<string, Promise<JsonObject>>();

  constructor(store: ExecutionStore) {
    this.#store = store;
  }

  /** The context an instance starts with (read-only: see the caller). */
  inputOf(workflow: Workflow, { task, pipeline, terminalTasks }: ClaimedTask): Promise<JsonObject> {
    const mapTaskId = task.mapOf!;
    // Claimed with another task of its pipeline, the claim brought the terminal tasks along.
    if (terminalTasks.length > 0) return Promise.resolve(taskInput(workflow, mapTaskId, pipeline.input, terminalTasks));
    const key = `${pipeline.id}\u001f${mapTaskId}\u001f${task.mapItem?.attempt ?? 0}`;
    let input = this.#inputs.get(key);
    if (input === undefined) {
      input = this.#store.listTasks(pipeline.id).then((tasks: TaskRow[]) =>
        taskInput(
          workflow,
          mapTaskId,
          pipeline.input,
          tasks.filter((t) => TERMINAL.has(t.status)),
        ),
      );
      this.#inputs.set(key, input);
      input.catch(() => this.#inputs.delete(key));
      if (this.#inputs.size > MAX_KEPT_MAPPINGS) this.#inputs.delete(this.#inputs.keys().next().value!);
    }
    return input;
  }
}
