#!/usr/bin/env node
// `fanout`: Fanout's schema from the command line, without the Prisma CLI. One line per event
// on stdout; a mistake or a failure is one line on stderr and exit code 1 (2 for bad usage).
import pg from 'pg';
import { applyFanoutMigrations } from './migrations/apply.ts';
import { HOW_TO_MIGRATE, missingFanoutMigrations } from './migrations/check.ts';
import { copyFanoutMigrations, copyFanoutSchema } from './migrations/copy.ts';
import { FANOUT_MIGRATIONS } from './migrations/list.ts';

const USAGE = `usage: fanout <command>
  migrate [--database-url <url>]   apply the Fanout migrations the database lacks (DATABASE_URL by default)
  status [--database-url <url>]    list the Fanout migrations; exit code 1 when one is missing
  copy-migrations [<dir>]          copy them into your Prisma migrations folder (default prisma/migrations),
                                   for \`prisma migrate deploy\`; idempotent
  copy-schema [<dir>]              write the Fanout models (fanout.prisma) into your schema folder
                                   (default prisma/schema)`;

class UsageError extends Error {}

function databaseUrl(args: string[]): string {
  const at = args.indexOf('--database-url');
  const url = at >= 0 ? args[at + 1] : process.env.DATABASE_URL;
  if (at >= 0 && !url) throw new UsageError('--database-url: a connection string is required after it');
  if (!url) throw new UsageError('DATABASE_URL: not set (or pass --database-url <url>)');
  return url;
}

async function status(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url, application_name: 'fanout-status' });
  await client.connect();
  try {
    const missing = new Set(await missingFanoutMigrations({ $queryRawUnsafe: async (text: string) => (await client.query(text)).rows as any }));
    for (const { name } of FANOUT_MIGRATIONS) console.log(`${missing.has(name) ? 'missing' : 'applied'}  ${name}`);
    if (missing.size > 0) console.log(`${missing.size} missing: ${HOW_TO_MIGRATE}`);
    return missing.size > 0 ? 1 : 0;
  } finally {
    await client.end();
  }
}

async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case 'migrate': {
      const { applied, present } = await applyFanoutMigrations(databaseUrl(rest));
      for (const name of applied) console.log(`applied  ${name}`);
      console.log(applied.length > 0 ? `${applied.length} applied, ${present.length} already there` : `up to date (${present.length} migrations)`);
      return 0;
    }
    case 'status':
      return status(databaseUrl(rest));
    case 'copy-migrations': {
      const { copied, unchanged } = await copyFanoutMigrations(rest[0] ?? 'prisma/migrations');
      for (const name of copied) console.log(`copied   ${name}`);
      console.log(`${copied.length} copied, ${unchanged.length} already there`);
      return 0;
    }
    case 'copy-schema': {
      const { file, changed } = await copyFanoutSchema(rest[0] ?? 'prisma/schema');
      console.log(`${changed ? 'wrote' : 'up to date'}  ${file}`);
      return 0;
    }
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      console.log(USAGE);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command "${command}"\n${USAGE}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`fanout: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = error instanceof UsageError ? 2 : 1;
  },
);
