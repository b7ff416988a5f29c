import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatMessage } from './client.ts';

export interface SimulatedLlmOptions {
  /** Typical answer time; each answer takes this times a log-normal factor (0.5x to 2.5x). @default 700 */
  latencyMs?: number;
  /** Share of calls answered 429 with `Retry-After: 1`. @default 0.06 */
  rateLimitedShare?: number;
  /** Share of calls answered 503. @default 0.03 */
  unavailableShare?: number;
  /** Picks the fate of a call (tests pass a seeded generator). @default Math.random */
  random?: () => number;
  /** The model's answer (its text) to a conversation: the app's own offline logic. */
  answer(messages: readonly ChatMessage[]): string | Promise<string>;
}

export interface SimulatedLlm extends AsyncDisposable {
  /** The OpenAI-compatible base URL (`…/v1`). */
  baseUrl: string;
  readonly calls: { total: number; rateLimited: number; unavailable: number; inFlight: number; maxInFlight: number };
  close(): Promise<void>;
}

function chatAnswer(content: string) {
  return { id: `chatcmpl-${Date.now()}`, object: 'chat.completion', model: 'simulated-llm', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }] };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A local stand-in for an LLM provider: a real HTTP server speaking OpenAI's chat-completions
 * dialect, with the latency of a real model and its bad days (429 with Retry-After, 503). The
 * answer comes from the app (its offline logic), so results are real. `pnpm start` runs one so a
 * newcomer sees the global limit, the rate limit and retries at work.
 */
export async function startSimulatedLlm(options: SimulatedLlmOptions): Promise<SimulatedLlm> {
  const latencyMs = options.latencyMs ?? 700;
  const random = options.random ?? Math.random;
  const calls = { total: 0, rateLimited: 0, unavailable: 0, inFlight: 0, maxInFlight: 0 };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) return answer(404, { error: { message: 'not found' } });
      calls.total++;
      calls.inFlight++;
      calls.maxInFlight = Math.max(calls.maxInFlight, calls.inFlight);
      try {
        const body = JSON.parse(await readBody(req)) as { messages?: ChatMessage[] };
        const fate = random();
        // Log-normal around the typical latency, as model answer times are.
        const factor = Math.min(2.5, Math.max(0.5, Math.exp((random() - 0.5) * 1.6)));
        await new Promise((resolve) => setTimeout(resolve, latencyMs * factor));
        if (fate < (options.rateLimitedShare ?? 0.06)) {
          calls.rateLimited++;
          return answer(429, { error: { message: 'rate limit reached for requests', type: 'requests' } }, { 'retry-after': '1' });
        }
        if (fate < (options.rateLimitedShare ?? 0.06) + (options.unavailableShare ?? 0.03)) {
          calls.unavailable++;
          return answer(503, { error: { message: 'the server is overloaded, try again' } });
        }
        if (!Array.isArray(body.messages)) throw new Error('no messages');
        return answer(200, chatAnswer(await options.answer(body.messages)));
      } catch {
        return answer(400, { error: { message: 'the request body is not a chat completion request' } });
      } finally {
        calls.inFlight--;
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { baseUrl: `http://127.0.0.1:${port}/v1`, calls, close, [Symbol.asyncDispose]: close };
}
