export { consoleRoutes } from './server/routes.ts';
export type {
  ColumnSpec,
  ConsoleConfig,
  ExportSpec,
  FieldSpec,
  NewTaskPanel,
  PageSpec,
  PanelFilter,
  ResolvedConsoleConfig,
  RowAction,
  Source,
  TablePanel,
  TaskActionSpec,
} from './config.ts';
