import { startPostgres } from '@fanout/testdb';
const server = await startPostgres({ dataDir: '/tmp/probe/pg', port: 55432, settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all' } });
console.log(server.url);
setInterval(() => {}, 1 << 30);
