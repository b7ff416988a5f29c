import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyMigrations, createTestDatabase, getTestPostgres, loadMigrations, quoteIdent, startProcess } from './index.ts';
import { migrationsHash } from './migrations.ts';

let dir: string;

async function query<T>(url: string, sql: string, values: unknown[] = []): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, values)).rows as T[];
  } finally {
    await client.end();
  }
}

async function tables(url: string): Promise<string[]> {
  const rows = await query<{ table_name: string }>(
    url,
    `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`,
  );
  return rows.map((row) => row.table_name);
}

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'testdb-test-'));
  await fs.mkdir(path.join(dir, 'migrations', '20240102000000_second'), { recursive: true });
  await fs.mkdir(path.join(dir, 'migrations', '20240101000000_first'), { recursive: true });
  await fs.writeFile(path.join(dir, 'migrations', 'migration_lock.toml'), 'provider = "postgresql"\n');
  await fs.writeFile(path.join(dir, 'migrations', '20240101000000_first', 'migration.sql'), 'CREATE TABLE a (id int);');
  // Depends on the first migration: fails unless applied in name order.
  await fs.writeFile(path.join(dir, 'migrations', '20240102000000_second', 'migration.sql'), 'ALTER TABLE a ADD b int;');
  await fs.writeFile(path.join(dir, 'extra.sql'), 'CREATE TABLE extra (x int);');
});

afterAll(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

describe('loadMigrations', () => {
  it('orders subfolders by name and appends single files', async () => {
    const migrations = await loadMigrations([path.join(dir, 'migrations'), path.join(dir, 'extra.sql')]);
    expect(migrations.map((m) => m.name)).toEqual(['20240101000000_first', '20240102000000_second', 'extra.sql']);
  });

  it('rejects duplicate names', async () => {
    await expect(loadMigrations([path.join(dir, 'extra.sql'), path.join(dir, 'extra.sql')])).rejects.toThrow(/Duplicate/);
  });
});

describe('quoteIdent', () => {
  it('only accepts plain lower-case identifiers', () => {
    expect(quoteIdent('t_abc')).toBe('"t_abc"');
    expect(() => quoteIdent('a"; DROP DATABASE x; --')).toThrow();
    expect(() => quoteIdent('Upper')).toThrow();
  });
});

describe('createTestDatabase', () => {
  it('creates isolated databases with the migrations applied', async () => {
    const migrations = [path.join(dir, 'migrations'), path.join(dir, 'extra.sql')];
    const [one, two] = await Promise.all([
      createTestDatabase({ migrations, name: 'My Test' }),
      createTestDatabase({ migrations }),
    ]);
    try {
      expect(one.name).toMatch(/^t_my_test_[0-9a-f]{12}$/);
      expect(two.name).toMatch(/^t_[0-9a-f]{12}$/);
      expect(await tables(one.url)).toEqual(['_fanout_migrations', 'a', 'extra']);
      await query(one.url, 'INSERT INTO a (id, b) VALUES (1, 2)');
      expect(await query(two.url, 'SELECT * FROM a')).toEqual([]);
      expect(await applyMigrations(two.url, migrations)).toEqual([]);
    } finally {
      await one.drop();
      await two.drop();
    }
    const { url } = await getTestPostgres();
    const left = await query(url, 'SELECT datname FROM pg_database WHERE datname = ANY($1)', [[one.name, two.name]]);
    expect(left).toEqual([]);
  });

  it('fails on a broken migration without leaving databases behind', async () => {
    const broken = path.join(dir, 'broken-template.sql');
    await fs.writeFile(broken, 'CREATE TABLE ok (x int); SELECT * FROM no_such_table;');
    await expect(createTestDatabase({ migrations: [broken] })).rejects.toThrow(/broken-template\.sql.*no_such_table/);
    // Neither the template nor its half-built `_build` database is left (other test files may be
    // creating databases concurrently, so only look for this migration set's template).
    const prefix = `tpl_${migrationsHash(await loadMigrations([broken])).slice(0, 24)}`;
    const { url } = await getTestPostgres();
    expect(await query(url, 'SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [prefix])).toEqual([]);
  });

  it('drops databases that still have connections', async () => {
    const db = await createTestDatabase();
    const client = new Client({ connectionString: db.url });
    const errors: Error[] = [];
    client.on('error', (error) => errors.push(error));
    await client.connect();
    await db.drop();
    await db.drop(); // idempotent
    expect(errors.length).toBeGreaterThan(0);
    await client.end().catch(() => {});
  });

  it('disposes with await using', async () => {
    let name = '';
    {
      await using db = await createTestDatabase();
      name = db.name;
      expect(await tables(db.url)).toEqual([]);
    }
    const { url } = await getTestPostgres();
    expect(await query(url, 'SELECT 1 FROM pg_database WHERE datname = $1', [name])).toEqual([]);
  });
});

describe('applyMigrations', () => {
  it('applies pending migrations once, each in a transaction', async () => {
    await using db = await createTestDatabase();
    const migrations = path.join(dir, 'migrations');
    expect(await applyMigrations(db.url, [migrations])).toEqual(['20240101000000_first', '20240102000000_second']);
    expect(await applyMigrations(db.url, [migrations])).toEqual([]);

    const broken = path.join(dir, 'broken.sql');
    await fs.writeFile(broken, 'CREATE TABLE half (x int); SELECT * FROM no_such_table;');
    await expect(applyMigrations(db.url, [migrations, broken])).rejects.toThrow(/broken\.sql/);
    expect(await tables(db.url)).not.toContain('half');

    await fs.writeFile(path.join(dir, 'migrations', '20240101000000_first', 'migration.sql'), 'CREATE TABLE a (id bigint);');
    await expect(applyMigrations(db.url, [migrations])).rejects.toThrow(/has changed/);
    await fs.writeFile(path.join(dir, 'migrations', '20240101000000_first', 'migration.sql'), 'CREATE TABLE a (id int);');
  });
});

describe('startProcess', () => {
  it('resolves the workspace to its sources from the sources, and never from the build (as installed from npm)', async () => {
    const script = path.join(dir, 'argv.ts');
    await fs.writeFile(script, "console.log('READY ' + JSON.stringify(process.execArgv)); setInterval(() => {}, 1000);\n");
    const argvOf = async (start: typeof startProcess) => {
      const pod = await start(script, 'READY', 'postgres://unused');
      await pod.stop();
      return JSON.parse(pod.lines.find((l) => l.startsWith('READY'))!.slice('READY '.length)) as string[];
    };
    expect(await argvOf(startProcess)).toContain('--conditions=dev-source');
    // The build is what a project that installs @fanout/testdb (or the kit's appTest) runs: there the
    // packages' src is under node_modules, where Node strips no types.
    const built = (await import(new URL('../dist/index.js', import.meta.url).href)) as { startProcess: typeof startProcess };
    expect(await argvOf(built.startProcess)).not.toContain('--conditions=dev-source');
  });
});
