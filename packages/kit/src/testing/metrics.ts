import type { PodProcess } from '@fanout/testdb';

/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The metrics URL a process printed (`METRICS <port>`, with `FANOUT_METRICS_PORT` set). */
export function metricsUrl(pod: Pick<PodProcess, 'lines'>): string {
  const line = pod.lines.find((l) => l.startsWith('METRICS '));
  if (!line) throw new Error('the process serves no metrics: start it with FANOUT_METRICS_PORT');
  return `http://127.0.0.1:${line.split(' ')[1]}/metrics`;
}

/** Parses the Prometheus text format (comments skipped; label values unescaped). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[key!] = value!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    }
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** Fetches and parses a process's metrics. */
export async function scrape(url: string): Promise<Sample[]> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  return parseMetrics(await res.text());
}

/** The sum of the samples named `name` whose labels include `where`. */
export function total(samples: readonly Sample[], name: string, where: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v)).reduce((n, s) => n + s.value, 0);
}
