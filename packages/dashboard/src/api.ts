import { type CronScheduleInput, type Json, ValidationError } from '@orreryjs/runner';
import type { Hono } from 'hono';
import { streamSSE } from 'hono/streaming';
import type { DashboardClient } from './client.js';
import {
  loadExecutionDetail,
  loadExecutions,
  loadLedger,
  loadOverview,
  loadScheduleDetail,
  loadSchedules,
} from './data.js';
import type { ChangeWatcher } from './events.js';
import { parseInstant, parseStatus, parseText, parseWindow } from './input.js';
import { previewRuns } from './preview.js';
import { readScheduleBody } from './schedule-form.js';

/** How often the event stream sends a keep-alive comment. */
const KEEPALIVE_MS = 15_000;

function query(url: string): URLSearchParams {
  return new URL(url).searchParams;
}

/** The read side of the JSON API under `{basePath}/api/`, and the event stream. */
export function mountReadApi(app: Hono, client: DashboardClient, watcher: ChangeWatcher, now: () => Date): void {
  app.get('/api/overview', async (c) => c.json(await loadOverview(client)));
  app.get('/api/schedules', async (c) => c.json(await loadSchedules(client, parseWindow(query(c.req.url), 50), now())));
  app.get('/api/schedules/:idOrName', async (c) => {
    const detail = await loadScheduleDetail(client, c.req.param('idOrName'), { limit: 0, offset: 0 }, now());
    return c.json({ ...detail.view, stats: detail.stats });
  });
  app.get('/api/schedules/:idOrName/ledger', async (c) =>
    c.json(await loadLedger(client, c.req.param('idOrName'), parseWindow(query(c.req.url), 100))),
  );
  app.get('/api/executions', async (c) => {
    const q = query(c.req.url);
    const filter = {
      status: parseStatus(q.get('status')),
      workflowName: q.get('workflow') || undefined,
      schedule: q.get('schedule') || undefined,
    };
    return c.json(await loadExecutions(client, filter, parseWindow(q, 50)));
  });
  app.get('/api/executions/:id', async (c) => c.json(await loadExecutionDetail(client, c.req.param('id'))));
  // Each item of a map task, which the execution's JSON gives as counts only (a map may have
  // 10,000): a page at a time, 100 by default, like the other lists (`limit`, `offset` or `page`).
  app.get('/api/executions/:id/tasks/:taskId/instances', async (c) => {
    const window = parseWindow(query(c.req.url), 100);
    const instances = await client.listMapInstances(c.req.param('id'), c.req.param('taskId'), window);
    return c.json({ instances, ...window });
  });
  // Read-only like the rest of this side: the forms' live preview of an expression's next runs.
  app.get('/api/preview', (c) => c.json(previewRuns(query(c.req.url), now())));
  app.get('/api/workflows', async (c) => c.json(await client.listWorkflows()));
  app.get('/api/workflows/:name/groups', async (c) =>
    c.json(await client.listConcurrencyGroups({ workflowName: c.req.param('name') })),
  );
  app.get('/api/runners', async (c) => c.json(await client.listRunners({ includeStopped: true })));
  app.get('/api/events', (c) =>
    streamSSE(c, async (stream) => {
      let wake: () => void = () => {};
      let changed = false;
      const unsubscribe = watcher.subscribe(() => {
        changed = true;
        wake();
      });
      stream.onAbort(() => {
        unsubscribe();
        wake();
      });
      await stream.writeSSE({ event: 'ready', data: '{}' });
      while (!stream.aborted && !stream.closed) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await new Promise<void>((resolve) => {
          wake = resolve;
          timer = setTimeout(resolve, KEEPALIVE_MS);
        });
        clearTimeout(timer);
        if (stream.aborted || stream.closed) break;
        if (changed) {
          changed = false;
          await stream.writeSSE({ event: 'change', data: '{}' });
        } else {
          await stream.write(': keep-alive\n\n');
        }
      }
      unsubscribe();
    }),
  );
}

/** Reads a JSON or form body; an empty body is `{}`. */
async function body(request: Request): Promise<Record<string, unknown>> {
  const type = request.headers.get('content-type') ?? '';
  const text = await request.text();
  if (text.trim() === '') return {};
  if (type.includes('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(text));
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // Reported below as bad input.
  }
  throw new ValidationError('The request body must be a JSON object (or an HTML form).');
}

/**
 * The actions: POST of a new schedule and PATCH of one (the add and edit forms), POST
 * …/pause|resume|trigger|backfill|cancel|retry, POST of an execution's signal, and DELETE of a schedule.
 */
export function mountActions(app: Hono, client: DashboardClient, base: string): void {
  app.post('/api/schedules', async (c) => {
    // Whatever is missing (a name, the workflow) is refused by the engine, naming the field.
    const input = readScheduleBody(await body(c.req.raw)) as CronScheduleInput;
    const schedule = await client.addCronSchedule(input);
    const redirect = `${base}schedules/${encodeURIComponent(schedule.id)}`;
    return c.json({ message: `Added ${schedule.name ?? schedule.id}.`, schedule, redirect }, 201);
  });
  app.patch('/api/schedules/:idOrName', async (c) => {
    const patch = readScheduleBody(await body(c.req.raw));
    const schedule = await client.updateCronSchedule(c.req.param('idOrName'), patch);
    return c.json({ message: `Saved ${schedule.name ?? schedule.id}.`, schedule });
  });
  app.post('/api/schedules/:idOrName/pause', async (c) => {
    const note = parseText('note', (await body(c.req.raw)).note);
    const schedule = await client.setCronScheduleEnabled(
      c.req.param('idOrName'),
      false,
      note === undefined ? {} : { note },
    );
    return c.json({ message: `Paused ${schedule.name ?? schedule.id}.`, schedule });
  });
  app.post('/api/schedules/:idOrName/resume', async (c) => {
    const schedule = await client.setCronScheduleEnabled(c.req.param('idOrName'), true);
    return c.json({ message: `Resumed ${schedule.name ?? schedule.id}.`, schedule });
  });
  app.post('/api/schedules/:idOrName/trigger', async (c) => {
    // `{ overlapPolicy: 'allow' }` (the Force trigger button) starts it whatever the overlap policy;
    // triggerCronSchedule refuses any other option or value with a 400.
    const { overlapPolicy, ...rest } = await body(c.req.raw);
    const options = overlapPolicy === undefined ? rest : { ...rest, overlapPolicy };
    const execution = await client.triggerCronSchedule(
      c.req.param('idOrName'),
      Object.keys(options).length === 0 ? undefined : (options as { overlapPolicy?: 'allow' }),
    );
    return c.json({ message: `Triggered: execution ${execution.id}.`, executionId: execution.id });
  });
  app.post('/api/schedules/:idOrName/backfill', async (c) => {
    const input = await body(c.req.raw);
    const range = { start: parseInstant('start', input.start), end: parseInstant('end', input.end) };
    const result = await client.backfillCronSchedule(c.req.param('idOrName'), range);
    return c.json({ message: `Backfill: ${result.created} created, ${result.existing} already there.`, ...result });
  });
  app.delete('/api/schedules/:idOrName', async (c) => {
    await client.deleteCronSchedule(c.req.param('idOrName'));
    return c.json({ message: 'Deleted.', redirect: `${base}schedules` });
  });
  app.post('/api/executions/:id/cancel', async (c) => {
    await client.cancelExecution(c.req.param('id'));
    return c.json({ message: 'Cancelled.' });
  });
  app.post('/api/executions/:id/pause', async (c) => {
    await client.pauseExecution(c.req.param('id'), parseText('reason', (await body(c.req.raw)).reason));
    return c.json({ message: 'Paused.' });
  });
  app.post('/api/executions/:id/resume', async (c) => {
    await client.resumeExecution(c.req.param('id'));
    return c.json({ message: 'Resumed.' });
  });
  app.post('/api/executions/:id/retry', async (c) => {
    const execution = await client.retryExecution(c.req.param('id'));
    return c.json({ message: `Retrying execution ${execution.id}.`, executionId: execution.id });
  });
  app.post('/api/executions/:id/signal', async (c) => {
    // `{ name, payload? }`: the client checks both (a name of 1 to 200 characters, a JSON
    // payload within maxContextBytes) and refuses any other type with ValidationError.
    const { name, payload } = await body(c.req.raw);
    const executionId = c.req.param('id');
    await client.signal(executionId, name as string, payload as Json | undefined);
    return c.json({ message: `Sent signal "${String(name)}".`, executionId, name, sent: true });
  });
}
