/**
 * The application code the README's examples call without showing it: stand-ins for your own
 * functions (they log what they would do), and the `nightly` workflow of the main example for
 * the snippets that reuse it. Not itself an example: no README block shows this file.
 */
import { defineWorkflow } from '@orreryjs/runner';

/** Reads the rows to report on. */
export async function loadRows(): Promise<number[]> {
  return [3, 4, 5];
}

export function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** A task body: publishes the report. */
export async function publish(): Promise<void> {
  console.log('published the report');
}

/** The workflow of the README's main example (`nightly-report.ts`), for the snippets that reuse it. */
export const nightly = defineWorkflow({
  name: 'nightly-report',
  tasks: [
    {
      id: 'extract',
      run: async (ctx) => {
        ctx.set('rows', await loadRows());
      },
    },
    {
      id: 'summarise',
      dependsOn: ['extract'],
      run: (ctx) => {
        ctx.set('total', sum(ctx.get<number[]>('rows') ?? []));
      },
    },
    { id: 'publish', dependsOn: ['summarise'], retry: { maxAttempts: 5 }, run: publish },
  ],
});

export async function pullFromCrm(customerId: string): Promise<number> {
  return customerId.length;
}

export async function sendWelcome(userId: string): Promise<void> {
  console.log(`welcome sent to ${userId}`);
}

export async function sendTips(userId: string): Promise<void> {
  console.log(`tips sent to ${userId}`);
}

export async function requestApproval(orderId: string): Promise<void> {
  console.log(`approval requested for ${orderId}`);
}

export async function ship(orderId: string, approvedBy: string): Promise<void> {
  console.log(`shipped ${orderId}, approved by ${approvedBy}`);
}

export async function escalate(orderId: string): Promise<void> {
  console.log(`escalated ${orderId}`);
}

export async function listCustomers(): Promise<string[]> {
  return ['acme', 'globex', 'initech'];
}
