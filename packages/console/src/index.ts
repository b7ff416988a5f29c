export { consoleRoutes } from './server/routes.ts';
export type { ColumnSpec, ConsoleConfig, ExportSpec, FieldSpec, NewTaskPanel, ResolvedConsoleConfig, Source } from './config.ts';
