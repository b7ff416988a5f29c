import { library } from '../../tooling/tsup/library.ts';

export default library({ index: 'src/index.ts', cli: 'src/cli.ts' });
