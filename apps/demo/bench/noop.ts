import { defineFanout } from '@fanout/core';
import { z } from 'zod';

/** Jobs per fetch and workers per process, the same for raw pg-boss and for Fanout's children. */
export const BATCH = 100;
export const WORKERS = 4;

/** A task of n items that do nothing: what is measured is Fanout's own cost per child. */
export const noop = defineFanout({
  name: 'bench_noop',
  input: z.object({ n: z.number().int().min(1) }),
  item: z.object({ i: z.number().int() }),
  options: { manager: { pageSize: 1000 } },
  async *listItems({ n }) {
    for (let i = 0; i < n; i++) yield { key: String(i), snapshot: { i } };
  },
  async runItem() {
    return null;
  },
});

