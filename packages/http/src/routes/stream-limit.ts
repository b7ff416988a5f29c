import { HttpError } from '../errors.ts';

/** How long a client refused a stream should wait before asking again. */
const RETRY_AFTER_SECONDS = 10;

/**
 * Live streams open per tenant in this process. A stream holds a connection, timers and
 * listeners for as long as the client keeps it: one tenant must not exhaust them for everyone.
 */
export class StreamLimit {
  readonly perTenant: number;
  readonly #open = new Map<string, number>();

  constructor(perTenant: number) {
    this.perTenant = perTenant;
  }

  /** Streams open for `tenant` now. */
  openFor(tenant: string): number {
    return this.#open.get(tenant) ?? 0;
  }

  /**
   * Counts a stream for `tenant` while `response` streams: released when its body ends or the
   * client goes away. Past the limit, a 429 with `Retry-After`.
   */
  async hold(tenant: string, open: () => Response | Promise<Response>): Promise<Response> {
    const count = this.openFor(tenant);
    if (count >= this.perTenant) {
      throw new HttpError(
        429,
        'too_many_streams',
        `this tenant has ${count} live streams open on this server, the most allowed; close one (another tab?) or try again later`,
        undefined,
        { 'retry-after': String(RETRY_AFTER_SECONDS) },
      );
    }
    this.#open.set(tenant, count + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const left = this.openFor(tenant) - 1;
      if (left > 0) this.#open.set(tenant, left);
      else this.#open.delete(tenant);
    };
    let response: Response;
    try {
      response = await open();
    } catch (error) {
      release();
      throw error;
    }
    if (!response.body) {
      release();
      return response;
    }
    const reader = response.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done, value } = await reader.read();
          if (done) {
            release();
            controller.close();
          } else controller.enqueue(value);
        } catch (error) {
          release();
          controller.error(error);
        }
      },
      async cancel(reason) {
        release();
        await reader.cancel(reason);
      },
    });
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  }
}
