import { route, type RouteSpec } from '@fanout/http';
import { z } from 'zod';
import type { PrismaClient } from '../../generated/prisma/client.ts';

/** A page's end, as `nextCursor` says it: the last document's time and id, base64url. */
const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z) ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;
const encodeCursor = (createdAt: Date, id: string) => Buffer.from(`${createdAt.toISOString()} ${id}`).toString('base64url');
function decodeCursor(cursor: string): { createdAt: Date; id: string } | null {
  const match = CURSOR.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) return null;
  // A time that is no time (month 13, 30 February) does not come back as itself.
  const createdAt = new Date(match[1]!);
  return !Number.isNaN(createdAt.getTime()) && createdAt.toISOString() === match[1] ? { createdAt, id: match[2]! } : null;
}

const documentsQuery = z
  .object({
    limit: z.coerce.number({ error: 'must be an integer from 1 to 1000' }).int().min(1).max(1000).default(200),
    cursor: z
      .string()
      .max(200)
      .refine((c) => decodeCursor(c) !== null, { error: 'not a cursor this API returned (pass nextCursor from the previous page)', params: { rule: 'invalid_cursor' } })
      .optional(),
  })
  .strict();
const documentsSchema = z.object({
  documents: z.array(z.object({ id: z.uuid(), title: z.string(), filename: z.string(), createdAt: z.iso.datetime() })),
  /** The next page's `cursor`; null on the last page. */
  nextCursor: z.string().nullable(),
});

/** `GET /documents`: the caller's library (their tenant's papers), newest first, a page at a time. */
export function libraryRoutes(prisma: PrismaClient): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/documents',
      summary: "The tenant's library of papers, newest first",
      query: documentsQuery,
      responses: { 200: documentsSchema },
      async handler(c, { query }) {
        const after = query.cursor ? decodeCursor(query.cursor) : null;
        const docs = await prisma.kbDocument.findMany({
          where: {
            owner: c.get('principal').tenant,
            ...(after ? { OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }] } : {}),
          },
          orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
          take: query.limit + 1,
        });
        const page = docs.slice(0, query.limit);
        const last = page.at(-1);
        return c.json({
          documents: page.map((d) => ({ id: d.id, title: d.title, filename: d.filename, createdAt: d.createdAt.toISOString() })),
          nextCursor: docs.length > query.limit && last ? encodeCursor(last.createdAt, last.id) : null,
        });
      },
    }),
  ];
}
