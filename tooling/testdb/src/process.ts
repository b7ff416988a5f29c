import { spawn, type ChildProcess } from 'node:child_process';

/** Polls `check` until it returns a truthy value; fails after `timeoutMs` with `message`. */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  options: { timeoutMs?: number; intervalMs?: number; message?: string; describe?: () => Promise<string> | string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      const state = options.describe ? ` (state: ${await options.describe()})` : '';
      throw new Error(`timed out waiting for ${options.message ?? 'a condition'}${last ? `: ${String(last)}` : ''}${state}`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
}

export interface PodProcess {
  child: ChildProcess;
  pid: number;
  lines: string[];
  /** What the process wrote to stderr so far. */
  stderr(): string;
  exited: Promise<number | null>;
  /** SIGTERM, then wait for a clean exit. */
  stop(): Promise<number | null>;
  kill(signal: NodeJS.Signals): void;
}

/**
 * In this repository (this module run from its TypeScript source), a process resolves the
 * workspace's packages to their sources too; installed from npm, to what they ship (their `src`
 * is under `node_modules`, where Node strips no types).
 */
const SOURCE_CONDITIONS = import.meta.url.endsWith('.ts') ? ['--conditions=dev-source'] : [];

/**
 * Starts a TypeScript entry point as its own OS process (a "pod" in multi-process tests), with
 * `DATABASE_URL` and `env`, and waits until it prints a line starting with `readyWord`. Its
 * stdout lines are kept in `lines`; stderr is shown when FANOUT_TEST_VERBOSE is set.
 */
export async function startProcess(path: string, readyWord: string, databaseUrl: string, env: Record<string, string | number> = {}): Promise<PodProcess> {
  const child = spawn(process.execPath, [...SOURCE_CONDITIONS, '--no-warnings', path], {
    env: { ...process.env, DATABASE_URL: databaseUrl, ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)])) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let buffer = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    const parts = buffer.split('\n');
    buffer = parts.pop() ?? '';
    lines.push(...parts);
  });
  const errors: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    errors.push(chunk);
    if (process.env.FANOUT_TEST_VERBOSE) process.stderr.write(chunk);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await Promise.race([
    waitFor(() => lines.some((l) => l.startsWith(readyWord)), { timeoutMs: 30_000, message: `${readyWord} from ${path}` }),
    exited.then((code) => {
      throw new Error(`${path} exited with ${code} before ${readyWord}: ${errors.join('')}`);
    }),
  ]);
  return {
    child,
    pid: child.pid!,
    lines,
    stderr: () => errors.join(''),
    exited,
    kill: (signal) => child.kill(signal),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
