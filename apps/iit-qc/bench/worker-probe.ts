// Loaded into the bench's worker processes (`NODE_OPTIONS=--import=...`). Every BENCH_MEMORY_MS
// (default 100) ms it prints the process's memory as `MEM <epoch ms> <rss> <heapUsed> <external>
// <arrayBuffers> <young generation's size>`, and after each full (mark-compact) garbage collection
// `GC <epoch ms> <heapUsed>` (bytes). The heap right after a full collection is what the process
// still holds (its live objects); the periodic heap also counts garbage V8 has not collected yet,
// which grows with the heap limit V8 chooses, not with what the code keeps. The timer is unref'd:
// it never keeps a stopping worker alive.
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

const every = Number(process.env.BENCH_MEMORY_MS ?? 100);
setInterval(() => {
  const m = process.memoryUsage();
  const young = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
  process.stdout.write(`MEM ${Date.now()} ${m.rss} ${m.heapUsed} ${m.external} ${m.arrayBuffers} ${young}\n`);
}, every).unref();

new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (((entry as { detail?: unknown }).detail as { kind?: number } | undefined)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
      process.stdout.write(`GC ${Date.now()} ${process.memoryUsage().heapUsed}\n`);
    }
  }
}).observe({ entryTypes: ['gc'] });

// On SIGUSR2: a full garbage collection, then `RETAINED <epoch ms> <heapUsed>`: what the process
// keeps once a run is over (the bench asks after each run).
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;
process.on('SIGUSR2', () => {
  collect();
  process.stdout.write(`RETAINED ${Date.now()} ${process.memoryUsage().heapUsed}\n`);
});

// Diagnostics (BENCH_HEAP_PROFILE=<file>): V8's sampling heap profiler records the allocations
// that survive the young generation (promoted to the old one, garbage or not), from the start;
// at exit, the sites that allocated the most of them are written to the file.
if (process.env.BENCH_HEAP_PROFILE) {
  const { Session } = await import('node:inspector');
  const { writeFileSync } = await import('node:fs');
  const session = new Session();
  session.connect();
  session.post('HeapProfiler.startSampling', { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: false });
  process.on('exit', () => {
    session.post('HeapProfiler.stopSampling', (error, result) => {
      if (error) return;
      interface Node { callFrame: { functionName: string; url: string; lineNumber: number }; selfSize: number; children: Node[] }
      const by = new Map<string, number>();
      const walk = (n: Node, stack: string[]) => {
        const here = [...stack, `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.split('/').slice(-3).join('/')}:${n.callFrame.lineNumber + 1}`];
        const key = here.slice(-6).reverse().join(' < ');
        if (n.selfSize) by.set(key, (by.get(key) ?? 0) + n.selfSize);
        for (const c of n.children) walk(c, here);
      };
      walk((result as { profile: { head: Node } }).profile.head, []);
      const top = [...by].sort((a, b) => b[1] - a[1]).slice(0, 40);
      writeFileSync(`${process.env.BENCH_HEAP_PROFILE}.${process.pid}`, top.map(([k, v]) => `${(v / 2 ** 20).toFixed(1).padStart(7)} MB  ${k}`).join('\n') + '\n');
    });
  });
}

// Diagnostics (BENCH_SLOW_MS=<ms>): every statement of the process's pg clients that takes longer,
// as `SLOW <epoch ms> <ms> <statement's first words>` (from sent to answered, event-loop delays
// included).
if (process.env.BENCH_SLOW_MS) {
  const { default: pg } = await import('pg');
  const slow = Number(process.env.BENCH_SLOW_MS);
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  proto.query = function (this: unknown, ...args: unknown[]) {
    const started = Date.now();
    const result = original.apply(this, args);
    if (result instanceof Promise) {
      const text = typeof args[0] === 'string' ? args[0] : String((args[0] as { text?: string })?.text ?? '?');
      result.then(
        () => {
          const ms = Date.now() - started;
          if (ms > slow) process.stdout.write(`SLOW ${started} ${ms} ${text.replace(/\s+/g, ' ').slice(0, 100)}\n`);
        },
        () => {},
      );
    }
    return result;
  };
}
