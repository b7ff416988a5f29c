/** One Server-Sent Events message. */
export interface SseMessage {
  event: string;
  data: string;
  /** The `id:` of this message, when it had one. */
  id: string | undefined;
}

/**
 * An incremental Server-Sent Events parser (the WHATWG event-stream format): feed it decoded text
 * as it arrives, in chunks cut anywhere; it returns the messages completed so far. Comment lines
 * (`: ping`) are heartbeats and give nothing.
 */
export class SseParser {
  #buffer = '';
  #event = '';
  #data: string[] = [];
  #id: string | undefined;
  #pendingCr = false;
  /** The last `id:` received, kept across messages (and set by a block without data too). */
  lastEventId: string | undefined;

  push(chunk: string): SseMessage[] {
    let text = chunk;
    // A \r\n split across two chunks must count as one line ending.
    if (this.#pendingCr && text.startsWith('\n')) text = text.slice(1);
    this.#pendingCr = text.endsWith('\r');
    this.#buffer += text;
    const messages: SseMessage[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.#buffer);
      if (!match) break;
      const line = this.#buffer.slice(0, match.index);
      this.#buffer = this.#buffer.slice(match.index + match[0].length);
      const message = this.#line(line);
      if (message) messages.push(message);
    }
    return messages;
  }

  #line(line: string): SseMessage | null {
    if (line === '') {
      if (this.#id !== undefined) this.lastEventId = this.#id;
      if (this.#data.length === 0) {
        this.#event = '';
        this.#id = undefined;
        return null;
      }
      const message = { event: this.#event || 'message', data: this.#data.join('\n'), id: this.#id };
      this.#event = '';
      this.#data = [];
      this.#id = undefined;
      return message;
    }
    if (line.startsWith(':')) return null;
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') this.#event = value;
    else if (field === 'data') this.#data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.#id = value;
    return null;
  }
}
