// `node --conditions=dev-source --no-warnings bench/encoder.ts`: the chunk encoder alone (parse,
// clean, validate, COPY text) on BENCH_ROWS (default 200,000) covid-shaped rows in this process,
// five rounds, with the CPU time of each (on a shared machine CPU time moves less than wall time).
// Where the ETL's own time goes, without PostgreSQL or the job queue; add --cpu-prof to see it
// by function.
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { chunkText } from '../src/load/chunk-text.ts';
import { compileSpec, parseSpec } from '../src/spec/compile.ts';

const rows = Number(process.env.BENCH_ROWS ?? 200_000);
const [header, ...records] = gunzipSync(readFileSync(new URL('../data/medicaldata/covid_testing_deid.csv.gz', import.meta.url))).toString('utf8').trimEnd().split('\n');
const lines: string[] = [];
for (let copy = 0; lines.length < rows; copy++) {
  for (const record of records) {
    if (lines.length >= rows) break;
    const comma = record.indexOf(',');
    lines.push(`${Number(record.slice(0, comma)) + copy * 100_000}${record.slice(comma)}`);
  }
}
const bytes = Buffer.from(`${lines.join('\n')}\n`);
const compiled = compileSpec(parseSpec(readFileSync(new URL('../data/specs/covid.yaml', import.meta.url), 'utf8')));
for (let round = 1; round <= 5; round++) {
  const wall = performance.now();
  const cpu = process.cpuUsage();
  const { counts } = chunkText(bytes, { compiled, header: header!.split(','), loadId: '6f1c1c9e-0000-4000-8000-000000000001', chunkNo: 1, firstLine: 2, lineField: false, delimiter: ',', quote: '"' });
  const used = process.cpuUsage(cpu);
  const cpuMs = (used.user + used.system) / 1000;
  console.log(JSON.stringify({ round, rows, wallMs: Math.round(performance.now() - wall), cpuMs: Math.round(cpuMs), rowsPerCpuSec: Math.round((rows / cpuMs) * 1000), ...counts }));
}
