import type { FanoutStore } from '@fanout/core';
import { fanoutOn, openPrismaDatabase } from '@fanout/kit';
import { migrationsDir } from '@fanout/prisma-adapter';
import { createTestDatabase } from '@fanout/testdb';
import { describe, expect, it } from 'vitest';
import { PrismaClient } from '../generated/prisma/client.ts';
import { testDefinition } from './fixtures/definitions.ts';
import { waitFor } from './fixtures/harness.ts';

const BATCH_METHODS = ['markAnnouncedMany', 'claimFanIns', 'completeFanIns'] as const;
const ONE_STATEMENT = 'recordEndings';

type Mode = 'one statement' | 'batch methods' | 'batch methods, one failing once' | 'one task at a time' | 'one task at a time, one failing once';

/**
 * The store with the optional methods of endings it has in `mode` (the others hidden, as in a
 * store that lacks them), counted: how many entries each call carried, and for `recordEndings`
 * how many tasks it wrote for and how many writes of each kind.
 */
function storeFor(store: FanoutStore, mode: Mode, calls: Record<string, number[]>): FanoutStore {
  let inFlight = 0;
  return new Proxy(store, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (property === ONE_STATEMENT) {
        if (mode !== 'one statement') return undefined;
        return (writes: ReadonlyArray<{ write: string; taskId: string }>, ...rest: unknown[]) => {
          (calls[ONE_STATEMENT] ??= []).push(new Set(writes.map((w) => w.taskId)).size);
          for (const kind of ['announced', 'claim_fan_in', 'complete_fan_in']) (calls[kind] ??= []).push(writes.filter((w) => w.write === kind).length);
          return (value as (...args: unknown[]) => unknown).call(target, writes, ...rest);
        };
      }
      if (property === 'claimFanIn' && mode === 'one task at a time, one failing once') {
        // The first claim made while another is in flight fails, as over a lost connection: its
        // batch holds claims that went through, and is tried again.
        return async (...args: unknown[]) => {
          (calls['claimFanIn'] ??= []).push(1);
          if (inFlight > 0 && !calls['claimFanIn failed']) {
            calls['claimFanIn failed'] = [1];
            throw new Error('connection lost');
          }
          inFlight++;
          try {
            return await (value as (...args: unknown[]) => unknown).apply(target, args);
          } finally {
            inFlight--;
          }
        };
      }
      if ((BATCH_METHODS as readonly PropertyKey[]).includes(property)) {
        if (mode.startsWith('one task at a time')) return undefined;
        return async (entries: readonly unknown[], ...rest: unknown[]) => {
          (calls[property as string] ??= []).push(entries.length);
          // The first announcement fails, as over a lost connection: its batch is tried again.
          if (mode === 'batch methods, one failing once' && property === 'markAnnouncedMany' && calls[property]!.length === 1) {
            throw new Error('connection lost');
          }
          return (value as (...args: unknown[]) => unknown).call(target, entries, ...rest);
        };
      }
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

// The process that finishes a task announces its ending and runs its fan-in; tasks finishing
// together share the statements that record both: one per batch for all three writes, or one
// per batch and kind with a store that lacks `recordEndings`, instead of three per task.
// The maintenance loop is kept out of the way (a minute apart), so this is the finishing path.
describe('endings of tasks that finish together', () => {
  const described: Record<Mode, string> = {
    'one statement': 'in shared statements',
    'batch methods': 'in a statement per kind',
    // A claim the failed batch made is not sent again (it would find its own lease and answer no).
    'batch methods, one failing once': 'in a statement per kind, one of them failing once',
    'one task at a time': 'one task at a time',
    // The claims of the failed batch that went through are not sent again either.
    'one task at a time, one failing once': 'one task at a time, one of them failing once',
  };
  for (const mode of Object.keys(described) as Mode[]) {
    it(`each is announced once and its fan-in runs once, recorded ${described[mode]}`, async () => {
      const db = await createTestDatabase({ migrations: [migrationsDir] });
      const database = openPrismaDatabase({ databaseUrl: db.url, prisma: (adapter) => new PrismaClient({ adapter }) });
      const fanIns = new Map<string, number>();
      const calls: Record<string, number[]> = {};
      const fanout = fanoutOn(
        { ...database, store: storeFor(database.store, mode, calls) as typeof database.store },
        {
          definitions: [testDefinition({ dispatchAtSubmit: 10, onFinish: (id) => void fanIns.set(id, (fanIns.get(id) ?? 0) + 1) })],
          worker: { concurrency: 20, leaseMs: 3000 },
          maintenance: { intervalMs: 60_000 },
        },
      );
      try {
        const completed: string[] = [];
        const errors: string[] = [];
        fanout.events.on('error', (e) => void errors.push(`${e.context}: ${String(e.error)}`));
        fanout.events.on('task.completed', (e) => void completed.push(e.id));
        await fanout.start();
        const tasks = await Promise.all(Array.from({ length: 30 }, (_, i) => fanout.submit('test_batch', { count: 2 }, { tenant: `t${i % 3}` })));
        const ids = tasks.map((t) => t.id);
        await waitFor(
          async () => {
            const { rows } = await database.pool.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM fanout_task WHERE id = ANY($1::uuid[]) AND status = 'completed' AND announced_round = round AND fanin_round = round`,
              [ids],
            );
            return rows[0]!.n === ids.length;
          },
          {
            timeoutMs: 30_000,
            message: 'every task completed, announced and fanned in',
            describe: async () => {
              const { rows } = await database.pool.query(
                `SELECT status, announced_round = round AS announced, fanin_round = round AS fanned_in, fanin_token IS NOT NULL AS fan_in_held, count(*)::int AS n
                 FROM fanout_task WHERE id = ANY($1::uuid[]) GROUP BY 1, 2, 3, 4`,
                [ids],
              );
              return `${JSON.stringify(rows)}; calls ${JSON.stringify(calls)}; errors ${JSON.stringify(errors)}`;
            },
          },
        );
        expect(completed.sort()).toEqual([...ids].sort());
        expect([...fanIns.keys()].sort()).toEqual([...ids].sort());
        expect([...fanIns.values()].every((n) => n === 1)).toBe(true);
        const { rows: leases } = await database.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM fanout_task WHERE id = ANY($1::uuid[]) AND (fanin_token IS NOT NULL OR fanin_lease_until IS NOT NULL OR announce_lease_until IS NOT NULL)`,
          [ids],
        );
        expect(leases[0]!.n).toBe(0);
        const sum = (sizes: number[] | undefined) => (sizes ?? []).reduce((a, b) => a + b, 0);
        if (mode === 'one statement') {
          for (const kind of ['announced', 'claim_fan_in', 'complete_fan_in']) expect(sum(calls[kind])).toBe(ids.length);
          // Tasks ending together shared a statement (a call counts the tasks it wrote for).
          expect(Math.max(...calls[ONE_STATEMENT]!)).toBeGreaterThan(1);
          for (const method of BATCH_METHODS) expect(calls[method]).toBeUndefined();
        } else if (mode.startsWith('batch methods')) {
          for (const method of BATCH_METHODS) {
            if (method === 'markAnnouncedMany' && mode !== 'batch methods') expect(sum(calls[method])).toBeGreaterThan(ids.length); // the failed call's, sent again
            else expect(sum(calls[method])).toBe(ids.length);
            expect(Math.max(...calls[method]!)).toBeGreaterThan(1); // tasks ending together shared a statement
          }
        } else if (mode === 'one task at a time') {
          expect(calls).toEqual({});
        } else {
          expect(calls['claimFanIn failed']).toEqual([1]);
          expect(sum(calls['claimFanIn'])).toBe(ids.length + 1); // the failed call's, sent again
        }
      } finally {
        await fanout.stop();
        await database.close();
        await db.drop();
      }
    });
  }
});
