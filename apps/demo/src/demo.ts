import { defineFanout, PermanentError, TransientError } from '@fanout/core';
import { z } from 'zod';

/**
 * The demo fan-out: "check" N fake documents. Most pass after a little work; a few are corrupt
 * (a permanent failure, recorded at once) and a few hit a flaky upstream (a transient failure,
 * retried with backoff, that then succeeds).
 */
export const demoBatch = defineFanout({
  name: 'demo_batch',
  input: z.object({
    documents: z.number().int().min(1).max(100_000),
    /** Every n-th document is corrupt. */
    corruptEvery: z.number().int().min(2).default(97),
    /** Every n-th document fails once with a transient error. */
    flakyEvery: z.number().int().min(2).default(31),
  }),
  item: z.object({ title: z.string(), pages: z.number().int().min(1), corrupt: z.boolean(), flaky: z.boolean() }),
  result: z.object({ words: z.number().int() }),
  options: { child: { retryDelaySeconds: 1 } },
  async *listItems({ documents, corruptEvery, flakyEvery }) {
    for (let n = 1; n <= documents; n++) {
      yield {
        key: `doc-${n}`,
        snapshot: { title: `Document ${n}`, pages: 1 + (n % 7), corrupt: n % corruptEvery === 0, flaky: n % flakyEvery === 0 },
      };
    }
  },
  async runItem(doc, ctx) {
    await new Promise((resolve) => setTimeout(resolve, 2 + doc.pages));
    if (doc.corrupt) throw new PermanentError(`${doc.title} is not a readable PDF`, { code: 'corrupt_pdf' });
    if (doc.flaky && ctx.item.attempt === 1) throw new TransientError('upstream answered 503');
    return { words: doc.pages * 420 };
  },
});
