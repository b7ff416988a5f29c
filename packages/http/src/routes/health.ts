import { randomUUID } from 'node:crypto';
import { maskedLogger } from '@fanout/core';
import { route, type RouteSpec } from '../route.ts';
import { healthSchema } from '../schemas.ts';
import type { TaskRoutesOptions } from './context.ts';

/** `/healthz` and `/readyz`: the process is up; the database and the queue answer. No token. */
export function healthRoutes(options: Pick<TaskRoutesOptions, 'fanout' | 'definition' | 'ready' | 'logger'>): RouteSpec[] {
  const { fanout, definition } = options;
  const logger = options.logger && maskedLogger(options.logger);
  return [
    route({ method: 'get', path: '/healthz', summary: 'The process is up', responses: { 200: healthSchema }, auth: false, handler: (c) => c.json({ ok: true }) }),
    route({
      method: 'get',
      path: '/readyz',
      summary: 'The database and the queue are reachable',
      responses: { 200: healthSchema, 503: healthSchema },
      auth: false,
      async handler(c) {
        const checks: Record<string, string> = {};
        const check = async (name: string, fn: () => Promise<unknown>) => {
          try {
            await fn();
            checks[name] = 'ok';
          } catch (error) {
            // The reason goes to the log, not to whoever asks (it may name hosts or users).
            checks[name] = 'failed';
            logger?.warn('readiness check failed', { check: name, error: (error as Error).message });
          }
        };
        await check('database', () => fanout.store.getTask(randomUUID()));
        await check('queue', async () => {
          if (!(await fanout.boss.getQueue(definition.childQueue))) throw new Error(`queue ${definition.childQueue} is missing`);
        });
        if (options.ready) await check('app', options.ready);
        const ok = Object.values(checks).every((v) => v === 'ok');
        return c.json({ ok, checks }, ok ? 200 : 503);
      },
    }),
  ];
}
