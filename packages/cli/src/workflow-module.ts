import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigurationError, type Workflow } from '@orreryjs/core';

/**
 * Imports workflow modules and returns every `Workflow` they export: named exports, the
 * default export, and arrays of workflows in either. Paths are relative to the working
 * directory. Two different workflows of one name are refused, because the runner could
 * not tell which one a stored execution belongs to.
 * @throws ConfigurationError when a module is missing, fails to load, or exports no workflow.
 */
export async function loadWorkflows(paths: readonly string[]): Promise<Workflow[]> {
  const byName = new Map<string, Workflow>();
  for (const path of paths) {
    for (const workflow of await workflowsOf(path)) {
      const known = byName.get(workflow.name);
      if (known !== undefined && known !== workflow && known.version !== workflow.version) {
        throw new ConfigurationError(
          `Two different workflows are named "${workflow.name}" (one in "${path}"); give each workflow a unique name.`,
        );
      }
      byName.set(workflow.name, known ?? workflow);
    }
  }
  return [...byName.values()];
}

async function workflowsOf(path: string): Promise<Workflow[]> {
  const absolute = resolve(path);
  if (!existsSync(absolute)) {
    throw new ConfigurationError(`Workflow module "${path}" does not exist (looked for ${absolute}).`);
  }
  let exports: Record<string, unknown>;
  try {
    exports = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ConfigurationError(`Workflow module "${path}" failed to load: ${message}${loadHint(message)}`, {
      cause: error,
    });
  }
  const found = Object.values(exports).flatMap((value) => (Array.isArray(value) ? value : [value]).filter(isWorkflow));
  if (found.length === 0) {
    throw new ConfigurationError(
      `Workflow module "${path}" exports no workflow; export the values returned by defineWorkflow() from @orreryjs/core.`,
    );
  }
  return [...new Set(found)];
}

/** What to do when node cannot load a TypeScript module by itself. */
function loadHint(message: string): string {
  if (!/Unknown file extension "\.[mc]?tsx?"/.test(message)) return '';
  return ' Node cannot run TypeScript by itself: run the CLI with a loader (npm i -D tsx, then node --import tsx ./node_modules/.bin/orrery worker …), or compile the module to .js and pass that.';
}

/** Duck-typed, so that a module bundling its own copy of @orreryjs/core still counts. */
function isWorkflow(value: unknown): value is Workflow {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Partial<Record<keyof Workflow, unknown>>;
  return (
    typeof candidate.name === 'string' &&
    typeof candidate.version === 'string' &&
    Array.isArray(candidate.tasks) &&
    candidate.taskById instanceof Map
  );
}
