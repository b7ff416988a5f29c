import { library } from '../tsup/library.ts';

// vitest is the test runner's own copy (its `inject` reads what the global setup provided):
// never bundled, an optional peer.
export default library({ index: 'src/index.ts', 'global-setup': 'src/global-setup.ts' }, { external: ['vitest'] });
