import type { SqlExecutor } from '@fanout/core';
import type { PrismaQueryable } from './prisma-like.ts';

/** pg-boss's `db` option over a Prisma interactive transaction (pg-boss ships its SQL with parameters). */
export function executor(tx: PrismaQueryable): SqlExecutor {
  return {
    async executeSql(text, values) {
      const rows = await (tx.$queryRawPrepared ?? tx.$queryRawUnsafe).call(tx, text, ...(values ?? []));
      return { rows: Array.isArray(rows) ? rows : [] };
    },
  };
}
