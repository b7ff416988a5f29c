import { defineConfig, mergeConfig } from 'vitest/config';
import { preset } from './tooling/vitest/preset.ts';

const include = ['packages/*/{src,test}/**/*.test.ts', 'apps/*/{src,test}/**/*.test.ts', 'tooling/*/src/**/*.test.ts'];
// The release test installs three fresh projects from the npm registry and mostly waits on the
// network: it runs after everything else, alone, so it neither holds a worker nor starves the
// timing-sensitive tests of CPU.
const release = 'tooling/release-tests/src/release.test.ts';

export default mergeConfig(
  preset,
  defineConfig({
    test: {
      projects: [
        { extends: true, test: { name: 'suite', include, exclude: [release] } },
        { extends: true, test: { name: 'release', include: [release], sequence: { groupOrder: 1 } } },
      ],
    },
  }),
);
