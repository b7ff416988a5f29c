import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appTest, type AppTestOf } from '@fanout/kit/testing';
import app from '../src/app.ts';

export interface AslTest extends AppTestOf<typeof app> {
  prisma: AppTestOf<typeof app>['rt']['ctx']['prisma'];
  storage: AppTestOf<typeof app>['rt']['ctx']['services']['storage'];
  storageDir: string;
}

/** The ASL app on a fresh database and file store, with API and worker processes on demand. */
export async function aslTest(env: Record<string, string | number> = {}): Promise<AslTest> {
  const storageDir = mkdtempSync(join(tmpdir(), 'asl-files-'));
  const t = await appTest(app, { env: { ASL_STORAGE_DIR: storageDir, ...env } });
  const dispose = t[Symbol.asyncDispose].bind(t);
  return Object.assign(t, {
    prisma: t.rt.ctx.prisma,
    storage: t.rt.ctx.services.storage,
    storageDir,
    async [Symbol.asyncDispose]() {
      await dispose();
      rmSync(storageDir, { recursive: true, force: true });
    },
  });
}
