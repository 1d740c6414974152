import {
  type ConcurrencyGroupInfo,
  describeConcurrencyRule,
  describeWaitingFor,
  effectivePriority,
  type PipelineSummary,
} from '@orreryjs/core';
import type { WorkflowInfo } from '@orreryjs/runner';
import { type Column, cut, formatInstant, orDash } from './output.js';

/*
 * Flow control as the CLI shows it: why a pending execution waits, a workflow's rules and
 * priority, and each concurrency group's occupancy. The words come from core, shared with the
 * dashboard; instants are formatted as everywhere else in the CLI.
 */

/** `pending · waiting for sync/customer=acme (2/2 active)`, `pending · starts at …`, else the bare status. */
export function statusWithReason(summary: Pick<PipelineSummary, 'status' | 'waitingFor'>): string {
  const { status, waitingFor } = summary;
  return waitingFor === null ? status : `${status} · ${describeWaitingFor(waitingFor, formatInstant)}`;
}

/**
 * The narrowest the Status column is cut to: a status with the start of its reason
 * (`pending · waiting for …`) stays readable however long the group's name.
 */
export const STATUS_MIN_WIDTH = 'pending · waiting for …'.length;

/**
 * Cuts a status with its reason in the group's name, so that the occupancy at the end stays:
 * `pending · waiting for sync/custo… (2/2 active)`; the end goes when even that does not fit.
 */
export function cutStatus(text: string, width: number): string {
  const occupancy = / \(\d+\/\d+ active\)$/.exec(text)?.[0];
  const head = width - (occupancy?.length ?? 0) - 1;
  if (occupancy === undefined || head < STATUS_MIN_WIDTH - 1) return cut(text, width);
  return `${text.slice(0, head)}…${occupancy}`;
}

/** A workflow's concurrency rules in words, `; `-separated, or `-` when it has none. */
export function concurrencyText(workflow: Pick<WorkflowInfo, 'concurrency'>): string {
  return orDash(workflow.concurrency?.map(describeConcurrencyRule).join('; '));
}

/** A workflow's priority, the default when its definition names none. */
export function priorityOf(workflow: Pick<WorkflowInfo, 'priority'>): number {
  return effectivePriority(workflow.priority);
}

// Without --wide: group and workflow cut to fit.
export const GROUP_COLUMNS: readonly Column<ConcurrencyGroupInfo>[] = [
  { header: 'Group', cell: (g) => g.group, shrinks: true },
  { header: 'Workflow', cell: (g) => g.workflowName, shrinks: true },
  { header: 'Active', cell: (g) => `${g.active} / ${g.limit}` },
  { header: 'Queued', cell: (g) => g.queued },
];
