// ASL tool 3 on one machine: an embedded PostgreSQL (unless DATABASE_URL is set), migrations, a
// sample library of generated papers on first start, and an API and a worker in this process.
// Data (database, files, the local token) persists in .data/asl between starts.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { consoleLogger } from '@fanout/core';
import { broadcastRuntimeEvents, TaskEventPublisher, TaskEventSubscriber } from '@fanout/sse-pg';
import { applyMigrations, localDatabase } from '@fanout/testdb';
import { aslApp, PREFIX } from './app.ts';
import { createSampleLibrary } from './library/sample.ts';
import { migrations } from './migrations.ts';
import { configFromEnv, createAslRuntime } from './runtime.ts';

const dataDir = fileURLToPath(new URL('../../../.data/asl', import.meta.url));
mkdirSync(dataDir, { recursive: true });
const tokenFile = join(dataDir, 'local-token');
if (!existsSync(tokenFile)) writeFileSync(tokenFile, randomBytes(24).toString('base64url'), { mode: 0o600 });
const token = readFileSync(tokenFile, 'utf8').trim();
const tenant = 'local';

const db = await localDatabase('asl', dataDir);
await applyMigrations(db.url, migrations);
const config = configFromEnv({ ...process.env, DATABASE_URL: db.url }, { storageDir: join(dataDir, 'files') });
const logger = consoleLogger('warn');
const rt = createAslRuntime({ ...config, logger });

if ((await rt.prisma.kbDocument.count({ where: { owner: tenant } })) === 0) {
  const ids = await createSampleLibrary(rt.prisma, rt.storage, tenant, 60);
  console.log(`sample library: ${ids.length} generated papers (a few corrupt or encrypted) in ${join(dataDir, 'files')}`);
}

const publisher = new TaskEventPublisher({ connectionString: db.url, logger });
broadcastRuntimeEvents(rt.fanout.events, publisher);
await rt.fanout.start();
const subscriber = new TaskEventSubscriber({ connectionString: db.url, logger });
await subscriber.start();
const app = aslApp(rt, { tokens: new Map([[token, tenant]]), subscriber });
const port = Number(process.env.PORT ?? 3000);
const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, (info) => {
  console.log(`database:   ${db.embedded ? `embedded PostgreSQL in ${join(dataDir, 'pg')}` : 'DATABASE_URL'}`);
  console.log(`extractor:  ${rt.extractor.model}`);
  console.log(`dashboard:  http://127.0.0.1:${info.port}/#token=${token}`);
  console.log(`API:        http://127.0.0.1:${info.port}${PREFIX}  (Authorization: Bearer ${token})`);
  console.log(`OpenAPI:    http://127.0.0.1:${info.port}${PREFIX}/openapi.json`);
  console.log('Ctrl-C stops; data stays in .data/asl.');
});

const stop = async () => {
  server.close();
  await subscriber.close();
  await rt.close();
  await publisher.close();
  await db.stop();
  process.exit(0);
};
// Our stop closes the runtime before the embedded server; the server's own signal handlers
// would stop it first and leave the runtime talking to nobody.
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.removeAllListeners(signal);
  process.once(signal, () => void stop());
}
