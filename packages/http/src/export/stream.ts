/** A byte stream of text chunks produced one at a time (for large downloads). */
export function textStream(chunks: AsyncIterable<string>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const iterator = chunks[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      // A few rows per pull: one enqueue per row costs more than the rows.
      let batch = '';
      while (batch.length < 64 * 1024) {
        const next = await iterator.next();
        if (next.done) {
          if (batch) controller.enqueue(encoder.encode(batch));
          controller.close();
          return;
        }
        batch += next.value;
      }
      controller.enqueue(encoder.encode(batch));
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

/** `{"<key>":[row,row,…]}` produced row by row. */
export async function* jsonArrayOf(key: string, rows: AsyncIterable<unknown> | Iterable<unknown>): AsyncGenerator<string> {
  yield `{${JSON.stringify(key)}:[`;
  let first = true;
  for await (const row of rows) {
    yield `${first ? '' : ','}${JSON.stringify(row)}`;
    first = false;
  }
  yield ']}';
}
