import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { getFreePort, waitFor } from '@fanout/testdb';
import { binOf } from './run.ts';

export interface LocalRegistry {
  url: string;
  /** A token of a user allowed to publish. */
  token: string;
  stop(): Promise<void>;
}

/**
 * Verdaccio on loopback, with no uplink: `@fanout/*` can only come from what was published to it,
 * and nothing is proxied. Consumers route only the `@fanout` scope here and get everything else
 * from their usual registry, as a company's private registry for its own scope would be used.
 */
export async function startLocalRegistry(dir: string): Promise<LocalRegistry> {
  const port = await getFreePort();
  const url = `http://127.0.0.1:${port}/`;
  fs.mkdirSync(path.join(dir, 'storage'), { recursive: true });
  const config = path.join(dir, 'config.yaml');
  fs.writeFileSync(
    config,
    [
      `storage: ${JSON.stringify(path.join(dir, 'storage'))}`,
      'auth:',
      '  htpasswd:',
      `    file: ${JSON.stringify(path.join(dir, 'htpasswd'))}`,
      '    max_users: 10',
      'uplinks: {}',
      'packages:',
      "  '**':",
      '    access: $all',
      '    publish: $authenticated',
      'publish:',
      '  allow_offline: true',
      'log: { type: stdout, format: pretty, level: warn }',
      '',
    ].join('\n'),
  );
  const bin = binOf('verdaccio', 'verdaccio');
  const child: ChildProcess = spawn(process.execPath, [bin, '--config', config, '--listen', `127.0.0.1:${port}`], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`verdaccio exited: ${output}`);
        return (await fetch(`${url}-/ping`).catch(() => null))?.ok === true;
      },
      { timeoutMs: 60_000, intervalMs: 100, message: 'verdaccio to answer /-/ping', describe: () => output.trim().split('\n').slice(-10).join('\n') || 'no output' },
    );
    const response = await fetch(`${url}-/user/org.couchdb.user:release`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'release', password: 'release-test-password' }),
    });
    const { token } = (await response.json()) as { token?: string };
    if (!response.ok || !token) throw new Error(`verdaccio refused the release user: ${response.status}`);
    return { url, token, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
