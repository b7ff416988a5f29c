import { randomUUID } from 'node:crypto';
import { createTestDatabase } from '@fanout/testdb';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { markDuplicates } from '../src/load/dedupe.ts';
import { createStageSql, stageTable } from '../src/load/tables.ts';
import { compileSpec, parseSpec } from '../src/spec/compile.ts';

// The fan-in's dedupe on its own, against an independent reading: keys with NULLs (which
// compare equal, as in GROUP BY), a spec order (descending, NULLs last) before the line.
describe('dedupe', () => {
  it('keeps the first row of each key group by the spec order then the line, NULL keys grouped together', async () => {
    await using db = await createTestDatabase({ migrations: [new URL('../prisma/migrations', import.meta.url).pathname], name: 'etl_dedupe' });
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    try {
      const spec = {
        version: 1,
        target: 't',
        columns: [
          { name: 'a', type: 'integer', required: true },
          { name: 'b', type: 'text' },
          { name: 'v', type: 'number' },
        ],
        dedupe: { key: ['a', 'b'], order: [{ column: 'v', direction: 'desc' }] },
      };
      const compiled = compileSpec(parseSpec(JSON.stringify(spec)));
      const loadId = randomUUID();
      const uploadId = randomUUID();
      const specId = randomUUID();
      await pool.query(`INSERT INTO etl_upload (id, tenant, filename, storage_key, bytes, sha256) VALUES ($1, 'x', 'f.csv', 'k', 1, 'h')`, [uploadId]);
      await pool.query(`INSERT INTO etl_spec (id, tenant, text, spec, sha256, version, target) VALUES ($1, 'x', '', '{}', 'h', '1', 't')`, [specId]);
      await pool.query(`INSERT INTO etl_load (id, tenant, upload_id, spec_id, status, chunk_records) VALUES ($1, 'x', $2, $3, 'loading', 10)`, [loadId, uploadId, specId]);
      await pool.query(createStageSql(loadId, compiled.targetColumns));

      // 600 rows over few keys: every kind of group, NULL in b and in v.
      let seed = 7;
      const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
      const rows = Array.from({ length: 600 }, (_, i) => ({
        line: 2 + i * 3,
        a: Math.floor(next() * 40),
        b: next() < 0.2 ? null : ['x', 'y', 'z'][Math.floor(next() * 3)]!,
        v: next() < 0.15 ? null : Math.floor(next() * 5),
      }));
      await pool.query(`INSERT INTO ${stageTable(loadId)} (_chunk, _line, a, b, v) SELECT 1, * FROM unnest($1::int[], $2::bigint[], $3::text[], $4::float8[])`, [
        rows.map((r) => r.line),
        rows.map((r) => r.a),
        rows.map((r) => r.b),
        rows.map((r) => r.v),
      ]);

      const client = await pool.connect();
      let result;
      try {
        await client.query('BEGIN');
        result = await markDuplicates(client, loadId, compiled);
        await client.query('COMMIT');
      } finally {
        client.release();
      }

      // The independent reading.
      const groups = new Map<string, typeof rows>();
      for (const r of rows) groups.set(JSON.stringify([r.a, r.b]), [...(groups.get(JSON.stringify([r.a, r.b])) ?? []), r]);
      const expected = [...groups.values()]
        .filter((g) => g.length > 1)
        .map((g) => {
          const ranked = [...g].sort((x, y) => (x.v === y.v ? x.line - y.line : x.v === null ? 1 : y.v === null ? -1 : y.v - x.v));
          return { key: [ranked[0]!.a, ranked[0]!.b], kept: ranked[0]!.line, dropped: ranked.slice(1).map((r) => r.line).sort((x, y) => x - y), first: Math.min(...g.map((r) => r.line)) };
        })
        .sort((x, y) => x.first - y.first);
      expect(expected.some((g) => g.key[1] === null)).toBe(true);
      expect(result).toEqual({ duplicates: expected.reduce((n, g) => n + g.dropped.length, 0), groups: expected.length });
      const recorded = await pool.query('SELECT group_no, key, kept_line, dropped_lines FROM etl_duplicate WHERE load_id = $1 ORDER BY group_no', [loadId]);
      expect(recorded.rows).toEqual(expected.map((g, i) => ({ group_no: i + 1, key: g.key, kept_line: g.kept, dropped_lines: g.dropped })));
      const marked = await pool.query(`SELECT _line FROM ${stageTable(loadId)} WHERE _dup ORDER BY _line`);
      expect(marked.rows.map((r) => r._line)).toEqual(expected.flatMap((g) => g.dropped).sort((x, y) => x - y));
    } finally {
      await pool.end();
    }
  });
});
