import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serve } from '@hono/node-server';
import type { Hono } from 'hono';

export interface Listening {
  port: number;
  url: string;
  /**
   * Stops accepting connections, lets requests in flight finish for up to `graceMs`, then cuts
   * what is left (live event streams never finish by themselves).
   */
  close(graceMs?: number): Promise<void>;
}

/** Serves an app on `host:port` (0 picks a free port) and resolves once it listens. */
export function listen(http: Hono, options: { port: number; host: string }): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: http.fetch, port: options.port, hostname: options.host }) as Server;
    server.once('error', reject);
    server.once('listening', () => {
      server.off('error', reject);
      const { port } = server.address() as AddressInfo;
      const host = options.host.includes(':') ? `[${options.host}]` : options.host;
      resolve({
        port,
        url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
        close: (graceMs = 2000) =>
          new Promise<void>((done) => {
            const cut = setTimeout(() => server.closeAllConnections(), graceMs);
            server.close(() => {
              clearTimeout(cut);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}
