import { errorSchema, HttpError, route, type RouteSpec } from '@fanout/http';
import type pg from 'pg';
import { detailRows, reportData, xlsxReport } from '../report/report.ts';
import { idParams, ownedRun } from './common.ts';

/** A finished run's report: .xlsx (streamed) or JSON; 409 while the run is not done. */
export function reportRoutes({ pool }: { pool: pg.Pool }): RouteSpec[] {
  const finished = async (c: Parameters<RouteSpec['handler']>[0], id: string) => {
    const run = await ownedRun(pool, c, id);
    if (run.stage !== 'done') throw new HttpError(409, 'conflict', `run ${id} is not finished (stage ${run.stage}): its report comes when it is`);
    return reportData(pool, id);
  };
  return [
    route({
      method: 'get',
      path: '/runs/:id/report.xlsx',
      summary: 'The run report as an Excel workbook: Dataset Summary, Issue Summary, Details (capped per rule) and Rules, written while it streams',
      params: idParams,
      responses: { 200: { contentType: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet' }, 409: errorSchema },
      async handler(c, { params }) {
        const data = await finished(c, params.id);
        return new Response(xlsxReport(pool, data), {
          headers: { 'content-type': 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 'content-disposition': `attachment; filename="qc-report-${params.id}.xlsx"` },
        });
      },
    }),
    route({
      method: 'get',
      path: '/runs/:id/report.json',
      summary: 'The run report as JSON: the same sheets, details capped per rule',
      params: idParams,
      responses: { 200: { contentType: 'application/json', description: 'the report: run, datasets, rules, issue summary and details' }, 409: errorSchema },
      async handler(c, { params }) {
        const data = await finished(c, params.id);
        const details = [];
        for await (const d of detailRows(pool, params.id, data.run.cap)) details.push(d);
        return c.json({ ...data, details });
      },
    }),
  ];
}
