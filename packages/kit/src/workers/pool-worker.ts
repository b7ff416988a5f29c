// The thread side of WorkerPool: loads the job module once, then runs one job per message and
// answers with its value or its error. Only Node built-ins here: it runs without the app's
// module graph (and without a build step, as TypeScript Node strips).
import { parentPort, workerData } from 'node:worker_threads';

const port = parentPort!;
const mod = (await import((workerData as { module: string }).module)) as { default: (input: unknown) => unknown };

port.on('message', async ({ id, input }: { id: number; input: unknown }) => {
  try {
    const value = await mod.default(input);
    port.postMessage({ id, ok: true, value });
  } catch (error) {
    const e = error as { name?: unknown; message?: unknown; code?: unknown };
    port.postMessage({ id, ok: false, error: { name: String(e?.name ?? 'Error'), message: String(e?.message ?? error), ...(typeof e?.code === 'string' ? { code: e.code } : {}) } });
  }
});
// Loaded: the pool starts timing jobs from here, not from the thread's start.
port.postMessage({ ready: true });
