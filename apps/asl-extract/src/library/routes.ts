import { route, type RouteSpec } from '@fanout/http';
import { z } from 'zod';
import type { PrismaClient } from '../../generated/prisma/client.ts';

const documentsQuery = z.object({ limit: z.coerce.number({ error: 'must be an integer from 1 to 1000' }).int().min(1).max(1000).default(200) }).strict();
const documentsSchema = z.object({ documents: z.array(z.object({ id: z.uuid(), title: z.string(), filename: z.string(), createdAt: z.iso.datetime() })) });

/** `GET /documents`: the caller's library (their tenant's papers), oldest first. */
export function libraryRoutes(prisma: PrismaClient): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/documents',
      summary: "The tenant's library of papers",
      query: documentsQuery,
      responses: { 200: documentsSchema },
      async handler(c, { query }) {
        const docs = await prisma.kbDocument.findMany({ where: { owner: c.get('principal').tenant }, orderBy: [{ createdAt: 'asc' }, { filename: 'asc' }], take: query.limit });
        return c.json({ documents: docs.map((d) => ({ id: d.id, title: d.title, filename: d.filename, createdAt: d.createdAt.toISOString() })) });
      },
    }),
  ];
}
