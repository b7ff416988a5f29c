import { route, type RouteSpec } from '../route.ts';
import { errorSchema, operationsSchema, principalSchema } from '../schemas.ts';
import type { TaskRoutesOptions } from './context.ts';

const iso = (d: Date) => d.toISOString();

/** Who the caller is, and (for operators) how the platform is doing. */
export function operationRoutes(options: TaskRoutesOptions): RouteSpec[] {
  const { fanout } = options;
  return [
    route({
      method: 'get',
      path: '/me',
      summary: "The caller's tenant and role (user or operator)",
      responses: { 200: principalSchema, 401: errorSchema },
      handler: (c) => {
        const principal = c.get('principal');
        return c.json({ tenant: principal.tenant, role: principal.role ?? 'user' });
      },
    }),
    route({
      method: 'get',
      path: '/ops',
      summary: "Operators only: queue depths, live and lost processes, the shared limits, throughput and latency per 10 s over 15 minutes, and the maintenance loop's recoveries",
      operator: true,
      responses: { 200: operationsSchema, 401: errorSchema, 403: errorSchema },
      async handler(c) {
        const ops = await fanout.operations();
        return c.json({
          at: iso(ops.at),
          queues: ops.queues,
          workers: ops.workers.map((w) => ({ ...w, startedAt: iso(w.startedAt), lastSeenAt: iso(w.lastSeenAt) })),
          limits: ops.limits.map((l) => ({ ...l, waitedMs: Math.round(l.waitedMs) })),
          series: ops.series.map((p) => ({ ...p, at: iso(p.at) })),
          recoveries: { ...ops.recoveries, deadLettered: ops.queues.reduce((n, q) => n + q.deadLetter, 0) },
          attention: ops.attention && {
            active: ops.attention.active,
            overdue: ops.attention.overdue.map((t) => ({ ...t, deadlineAt: iso(t.deadlineAt) })),
            stalled: ops.attention.stalled,
          },
          errors: ops.errors,
          leasesLost: ops.leasesLost,
          live: ops.live,
        });
      },
    }),
  ];
}
