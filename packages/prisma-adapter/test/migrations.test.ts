import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { applyMigrations, createTestDatabase, loadMigrations, type TestDatabase } from '@fanout/testdb';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import {
  applyFanoutMigrations,
  copyFanoutMigrations,
  copyFanoutSchema,
  FANOUT_MIGRATIONS,
  migrationsDir,
  missingFanoutMigrations,
  schemaPath,
} from '../src/index.ts';
import { poolQueryable } from '../src/pool.ts';

// One migration story: every Fanout table comes from the SQL folders under prisma/migrations, in
// order; `fanout migrate` (applyFanoutMigrations) applies them without the Prisma CLI, `fanout
// copy-migrations` hands them to `prisma migrate deploy` (start() refusing a database that misses
// one is in start.test.ts).

const databases: TestDatabase[] = [];
const pools: pg.Pool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end()));
  await Promise.all(databases.map((db) => db.drop()));
});

async function blankDatabase(): Promise<{ url: string; pool: pg.Pool }> {
  const db = await createTestDatabase({ name: 'migrations' });
  databases.push(db);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pools.push(pool);
  return { url: db.url, pool };
}

const sqlOf = async (name: string) => fs.readFile(path.join(migrationsDir, name, 'migration.sql'), 'utf8');
const missing = (pool: pg.Pool) => missingFanoutMigrations(poolQueryable(pool));
const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const runCli = (args: string[], cwd = process.cwd()) =>
  spawnSync(process.execPath, ['--conditions=dev-source', '--no-warnings', cli, ...args], { cwd, encoding: 'utf8', env: { ...process.env, DATABASE_URL: '' } });

describe('the migration list', () => {
  it('names every folder under prisma/migrations, in name order', async () => {
    const folders = (await fs.readdir(migrationsDir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
    expect(FANOUT_MIGRATIONS.map((m) => m.name)).toEqual([...folders].sort());
    for (const name of folders) expect(await sqlOf(name)).not.toBe('');
  });

  it('tells each migration from the ones before it: a probe is false until its own SQL ran', async () => {
    const { pool } = await blankDatabase();
    const names = FANOUT_MIGRATIONS.map((m) => m.name);
    expect(await missing(pool)).toEqual(names);
    for (const [i, name] of names.entries()) {
      await pool.query(await sqlOf(name));
      expect(await missing(pool)).toEqual(names.slice(i + 1));
    }
  });
});

describe('every table has its model (prisma migrate dev sees no drift)', () => {
  it('fanout.prisma maps exactly the tables and columns the migrations create', async () => {
    const { pool } = await blankDatabase();
    for (const { name } of FANOUT_MIGRATIONS) await pool.query(await sqlOf(name));
    const { rows } = await pool.query<{ table_name: string; column_name: string }>(
      `SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY 1, 2`,
    );
    const database = new Map<string, string[]>();
    for (const row of rows) database.set(row.table_name, [...(database.get(row.table_name) ?? []), row.column_name]);

    // The models as Prisma maps them: @@map names the table, @map a column, relation fields
    // (a model type, or a list of one) have no column.
    const schema = await fs.readFile(schemaPath, 'utf8');
    const models = new Map<string, string[]>();
    const modelNames = new Set([...schema.matchAll(/^model (\w+) \{/gm)].map((m) => m[1]!));
    for (const [, , body] of schema.matchAll(/^model (\w+) \{\n([\s\S]*?)^\}/gm)) {
      const table = /@@map\("(\w+)"\)/.exec(body!)?.[1];
      expect(table, 'every model names its table with @@map').toBeDefined();
      const columns: string[] = [];
      for (const line of body!.split('\n')) {
        const field = /^\s+(\w+)\s+(\w+)(\[\])?\??(.*)$/.exec(line);
        if (!field || line.trim().startsWith('//') || modelNames.has(field[2]!)) continue;
        columns.push(/@map\("(\w+)"\)/.exec(field[4]!)?.[1] ?? field[1]!);
      }
      models.set(table!, columns.sort());
    }
    expect(Object.fromEntries(models)).toEqual(Object.fromEntries(database));
  });
});

describe('applyFanoutMigrations (fanout migrate)', () => {
  it('applies every migration once, under a lock, and is a no-op the second time', async () => {
    const { url, pool } = await blankDatabase();
    const [first, second] = await Promise.all([applyFanoutMigrations(url), applyFanoutMigrations(pool)]);
    const all = FANOUT_MIGRATIONS.map((m) => m.name);
    // Whichever took the lock first applied everything; the other found it all there.
    expect([first.applied, second.applied].sort((a, b) => b.length - a.length)).toEqual([all, []]);
    expect(await applyFanoutMigrations(url)).toEqual({ applied: [], present: all });
    expect(await missing(pool)).toEqual([]);
  });

  it('picks up where a database stopped, and agrees with the ledger the kit and testdb keep', async () => {
    const { url, pool } = await blankDatabase();
    const [init, ...rest] = await loadMigrations([migrationsDir]);
    await applyMigrations(url, [init!.file]);
    // testdb recorded the init under its folder name with the same checksum: it is not run again.
    expect(await applyFanoutMigrations(url)).toEqual({ applied: rest.map((m) => m.name), present: [init!.name] });
    expect(await applyMigrations(url, [migrationsDir])).toEqual([]);
    expect(await missing(pool)).toEqual([]);
  });

  it('counts what prisma migrate deploy recorded, and what was applied by hand, as present', async () => {
    const { url, pool } = await blankDatabase();
    const [init, events, ...rest] = FANOUT_MIGRATIONS.map((m) => m.name);
    await pool.query(`CREATE TABLE _prisma_migrations (migration_name text, finished_at timestamptz, rolled_back_at timestamptz)`);
    await pool.query(await sqlOf(init!));
    await pool.query(`INSERT INTO _prisma_migrations VALUES ($1, now(), NULL)`, [init]);
    await pool.query(await sqlOf(events!)); // by hand: no record anywhere
    expect(await applyFanoutMigrations(url)).toEqual({ applied: rest, present: [init, events] });
    const ledger = await pool.query<{ name: string }>(`SELECT name FROM _fanout_migrations ORDER BY name`);
    expect(ledger.rows.map((r) => r.name)).toEqual([events, ...rest]);
  });

  it('refuses a database where a released migration was applied with other SQL', async () => {
    const { url, pool } = await blankDatabase();
    await applyFanoutMigrations(url);
    await pool.query(`UPDATE _fanout_migrations SET checksum = 'edited' WHERE name = $1`, [FANOUT_MIGRATIONS[2]!.name]);
    await expect(applyFanoutMigrations(url)).rejects.toThrow(`Fanout migration ${FANOUT_MIGRATIONS[2]!.name} was applied with other SQL`);
  });
});

describe('copyFanoutMigrations and copyFanoutSchema (for Prisma users)', () => {
  it('copies every folder into the app\'s prisma/migrations, idempotently, and never over an edited one', async () => {
    const app = await fs.mkdtemp(path.join(os.tmpdir(), 'fanout-copy-'));
    try {
      const target = path.join(app, 'prisma', 'migrations');
      await fs.mkdir(path.join(target, '20260101000000_app_init'), { recursive: true });
      await fs.writeFile(path.join(target, '20260101000000_app_init', 'migration.sql'), 'CREATE TABLE app (id int);\n');
      const all = FANOUT_MIGRATIONS.map((m) => m.name);
      expect(await copyFanoutMigrations(target)).toEqual({ copied: all, unchanged: [] });
      expect(await copyFanoutMigrations(target)).toEqual({ copied: [], unchanged: all });
      for (const name of all) expect(await fs.readFile(path.join(target, name, 'migration.sql'), 'utf8')).toBe(await sqlOf(name));
      expect((await fs.readdir(target)).sort()).toEqual(['20260101000000_app_init', ...all].sort());

      await fs.appendFile(path.join(target, all[1]!, 'migration.sql'), '-- edited\n');
      await fs.rm(path.join(target, all[3]!), { recursive: true });
      await expect(copyFanoutMigrations(target)).rejects.toThrow(`${all[1]}/migration.sql differs from the one @fanout/prisma-adapter ships`);
      await expect(fs.stat(path.join(target, all[3]!))).rejects.toThrow('ENOENT');

      const schema = path.join(app, 'prisma', 'schema');
      expect(await copyFanoutSchema(schema)).toEqual({ file: path.join(schema, 'fanout.prisma'), changed: true });
      expect(await copyFanoutSchema(schema)).toMatchObject({ changed: false });
      expect(await fs.readFile(path.join(schema, 'fanout.prisma'), 'utf8')).toBe(await fs.readFile(schemaPath, 'utf8'));
    } finally {
      await fs.rm(app, { recursive: true, force: true });
    }
  });
});

describe('the fanout CLI', () => {
  it('reports, applies and copies, one line each, with exit codes a script can test', async () => {
    const { url } = await blankDatabase();
    const before = runCli(['status', '--database-url', url]);
    expect(before.status).toBe(1);
    expect(before.stdout).toContain(`missing  ${FANOUT_MIGRATIONS[0]!.name}`);
    const migrate = runCli(['migrate', '--database-url', url]);
    expect(migrate.stderr).toBe('');
    expect(migrate.stdout).toContain(`${FANOUT_MIGRATIONS.length} applied, 0 already there`);
    expect(migrate.status).toBe(0);
    const after = runCli(['status', '--database-url', url]);
    expect(after.status).toBe(0);
    expect(after.stdout.trim().split('\n')).toEqual(FANOUT_MIGRATIONS.map((m) => `applied  ${m.name}`));

    const app = await fs.mkdtemp(path.join(os.tmpdir(), 'fanout-cli-'));
    try {
      expect(runCli(['copy-migrations'], app).stdout).toContain(`${FANOUT_MIGRATIONS.length} copied`);
      expect(runCli(['copy-migrations'], app).stdout).toContain(`0 copied, ${FANOUT_MIGRATIONS.length} already there`);
      expect(runCli(['copy-schema'], app).stdout).toContain(`wrote  ${path.join(app, 'prisma', 'schema', 'fanout.prisma')}`);
    } finally {
      await fs.rm(app, { recursive: true, force: true });
    }

    const noUrl = runCli(['migrate']);
    expect(noUrl).toMatchObject({ status: 2, stderr: 'fanout: DATABASE_URL: not set (or pass --database-url <url>)\n' });
    expect(runCli(['migrat']).status).toBe(2);
  });
});
