#!/usr/bin/env node
// Generates a Prisma client for a schema folder, on machines where the Prisma CLI cannot
// download its schema engine: `prisma generate` never runs the engine, it only checks that a
// binary is configured, so any executable will do.
//
// Usage: node scripts/prisma-generate.mjs <schema-folder> [extra.prisma ...]
// Extra .prisma files (e.g. the Fanout models shipped by @fanout/prisma-adapter) are copied
// into the schema folder under a `_` prefix first; those copies are build artifacts.
import { spawnSync } from 'node:child_process';
import { copyFileSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join, resolve } from 'node:path';

const [folder, ...extras] = process.argv.slice(2);
if (!folder) {
  console.error('usage: prisma-generate.mjs <schema-folder> [extra.prisma ...]');
  process.exit(2);
}
const schemaDir = resolve(folder);
for (const name of readdirSync(schemaDir)) if (name.startsWith('_') && name.endsWith('.prisma')) rmSync(join(schemaDir, name));
for (const extra of extras) copyFileSync(resolve(extra), join(schemaDir, `_${basename(extra)}`));

const require = createRequire(join(process.cwd(), 'package.json'));
const cli = require.resolve('prisma/build/index.js');
const result = spawnSync(process.execPath, [cli, 'generate', '--schema', schemaDir], {
  stdio: 'inherit',
  env: {
    ...process.env,
    CHECKPOINT_DISABLE: '1',
    PRISMA_HIDE_UPDATE_MESSAGE: '1',
    PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? '/bin/true',
  },
});
process.exit(result.status ?? 1);
