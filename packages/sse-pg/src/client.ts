/** One Server-Sent Event as received. */
export interface EventStreamMessage {
  event: string;
  id: string | undefined;
  data: any;
}

/**
 * Reads a `text/event-stream` body (from `fetch`) as it arrives, for Node clients and tests:
 * messages are collected in order (their `data` parsed as JSON), comment lines (heartbeats)
 * counted apart. `cancel()` closes the stream.
 */
export function collectEventStream(body: ReadableStream<Uint8Array>) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const messages: EventStreamMessage[] = [];
  let comments = 0;
  let buffer = '';
  let ended = false;
  const pump = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          let event = 'message';
          let id: string | undefined;
          const data: string[] = [];
          let comment = false;
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comment = true;
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('id: ')) id = line.slice(4);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (comment && data.length === 0) comments++;
          else messages.push({ event, id, data: JSON.parse(data.join('\n')) });
        }
      }
    } catch {
      // cancelled
    } finally {
      ended = true;
    }
  })();
  return {
    messages,
    get comments() {
      return comments;
    },
    get ended() {
      return ended;
    },
    async cancel() {
      await reader.cancel().catch(() => {});
      await pump;
    },
  };
}
