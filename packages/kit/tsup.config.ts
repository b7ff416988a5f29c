import { library } from '../../tooling/tsup/library.ts';

export default library({ index: 'src/index.ts', testing: 'src/testing/index.ts', 'process/entry': 'src/process/entry.ts', 'workers/pool-worker': 'src/workers/pool-worker.ts' });
