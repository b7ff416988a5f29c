import { library } from '../tsup/library.ts';

export default library({ index: 'src/index.ts', 'global-setup': 'src/global-setup.ts' });
