import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end, output captured; fails with the command, its exit code and the
 * tail of its output, so a failing step in a consumer project reads as what a developer would see.
 */
export function run(command: string, args: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; allowFailure?: boolean }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 180_000);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const result = { code, stdout, stderr };
      if (code === 0 || options.allowFailure) return resolve(result);
      const tail = `${stdout}\n${stderr}`.trim().split('\n').slice(-40).join('\n');
      reject(new Error(`${command} ${args.join(' ')} (in ${options.cwd}) exited with ${code ?? signal}:\n${tail}`));
    });
  });
}

/** The file a package's `bin` entry points at, resolved from this package's dependencies. */
export function binOf(pkg: string, name: string): string {
  // Not every package exports its package.json: look for it where Node would look for the package.
  const manifestPath = (createRequire(import.meta.url).resolve.paths(pkg) ?? []).map((dir) => path.join(dir, pkg, 'package.json')).find((file) => existsSync(file));
  if (!manifestPath) throw new Error(`${pkg} is not installed`);
  const { bin } = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin: string | Record<string, string> };
  const file = typeof bin === 'string' ? bin : bin[name];
  if (!file) throw new Error(`${pkg} has no bin named ${name}`);
  return path.join(path.dirname(manifestPath), file);
}
