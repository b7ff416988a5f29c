import { defineConfig, mergeConfig } from 'vitest/config';
import { preset } from './tooling/vitest/preset.ts';

export default mergeConfig(
  preset,
  defineConfig({
    test: {
      include: ['packages/*/{src,test}/**/*.test.ts', 'apps/*/{src,test}/**/*.test.ts', 'tooling/*/src/**/*.test.ts'],
    },
  }),
);
