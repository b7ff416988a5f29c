import { library } from '../../tooling/tsup/library.ts';

// The browser bundle is built by scripts/build-ui.ts after this (tsup cleans dist/ first).
export default library({ index: 'src/index.ts' });
