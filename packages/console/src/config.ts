// The console's configuration: what an app plugs into the shared console. The server embeds it
// (resolved, every field present) in the HTML shell; the browser bundle reads it from there. This
// file is shared by both sides, so it holds types and plain data only.

/** Where a `select` or `multiselect` field gets its choices: `GET apiBase + path`. */
export interface Source {
  /**
   * Path under the API base, with its query: `/documents?limit=1000`. A select's path may name an
   * earlier select of the panel as `{name}` (`/studies/{studyId}/rule-sets`): its choices wait for
   * that field's value and are loaded again when it changes, and the choice made is cleared then.
   */
  path: string;
  /** The array in the answer that holds the entries: `documents`. */
  list: string;
  /** The field of each entry submitted as the value: `id`. */
  value: string;
  /** The field of each entry shown to the user: `title`. */
  label: string;
  /** A secondary field shown beside the label: `filename`. */
  detail?: string;
  /**
   * The answer's field holding the next page's cursor (`nextCursor`): pages are followed, the
   * cursor sent back as the `cursor` query parameter, up to {@link MAX_SOURCE_ENTRIES} entries.
   * Without it, the first answer is all the choices.
   */
  next?: string;
}

/** A field named in a source's path: `{studyId}`. */
export const SOURCE_PLACEHOLDER = /\{([A-Za-z0-9_]+)\}/g;

/** The fields a source's path names, in order: `/studies/{studyId}/rule-sets` names `studyId`. */
export function sourceDependencies(path: string): string[] {
  return [...path.matchAll(SOURCE_PLACEHOLDER)].map((m) => m[1]!);
}

/** The most choices a paged source lists (a task of more is submitted through the API). */
export const MAX_SOURCE_ENTRIES = 10_000;

/** One field of the "new task" panel; its value lands in `input[name]`. */
export type FieldSpec =
  /** A checkbox list with "select all" and a filter box; the value is the chosen values (string[]). */
  | { kind: 'multiselect'; name: string; label: string; source: Source; min?: number; max?: number }
  /** A drop-down list; the value is the chosen value (string). */
  | { kind: 'select'; name: string; label: string; source: Source; required?: boolean }
  /**
   * A file, uploaded as multipart/form-data (field `file`) to `apiBase + upload.path` when chosen;
   * the value is the answer's `upload.idField` (string).
   */
  | { kind: 'file'; name: string; label: string; accept?: string; upload: { path: string; idField: string }; required?: boolean }
  | { kind: 'text'; name: string; label: string; required?: boolean; placeholder?: string }
  | { kind: 'number'; name: string; label: string; required?: boolean; min?: number; max?: number };

/** The app's "new task" panel, shown beside the task list. */
export interface NewTaskPanel {
  /** The panel's heading: "New batch". */
  title: string;
  /** The submit button's text: "Start batch". */
  submitLabel: string;
  fields: FieldSpec[];
  /** Offer the standard task options (maxFailures, maxFailureRatio, deadlineMs) in a folded "Options" section. */
  options?: boolean;
}

/** One of the app's result columns in the item table. */
export interface ColumnSpec {
  /** The column heading: "Design". */
  label: string;
  /** A dotted path into the item view: `snapshot.filename`, `result.fieldsFound`. */
  path: string;
  /**
   * How the value is shown: `datetime` an ISO date and time in the browser's zone, `task` a task id
   * of this app as a link to its page. @default 'text'
   */
  format?: 'text' | 'number' | 'ms' | 'json' | 'datetime' | 'task';
}

/** A download offered once a task finished: `GET apiBase + path` with `{id}` replaced. */
export interface ExportSpec {
  /** The button's text: "CSV". */
  label: string;
  /** Path under the API base with an `{id}` placeholder: `/tasks/{id}/results.csv`. */
  path: string;
}

/** A filter of a table panel, sent as a query parameter of its source. */
export interface PanelFilter {
  /** The query parameter: `status`. */
  name: string;
  label: string;
  /** The choices (an empty choice, "any", is added); without them, a text box. */
  options?: string[];
  /** The panel asks its source only once this filter has a value (it shows `empty` until then). @default false */
  required?: boolean;
}

/** A button on each row of a table panel: a request to the app with the row's fields in its path. */
export interface RowAction {
  /** The button's text: "Exclude". */
  label: string;
  method: 'POST' | 'DELETE';
  /**
   * Path under the API base with `{field}` placeholders filled from the row; `{id}` is the task's
   * on a task's page, the row's own on a page of the app.
   */
  path: string;
  /** Ask for a text first (the label of the box); it is sent as `{ "text": "..." }`. */
  prompt?: string;
  /** Ask for a confirmation first (the question). */
  confirm?: string;
  /** Offer it only on rows whose `field` equals one of `values`. */
  when?: { field: string; values: string[] };
}

/** A table of the app's own data, fed by one of its routes (a list under one key, `nextCursor` to page). */
export interface TablePanel {
  title: string;
  /** `GET apiBase + path` (`{id}` is the task's id on a task's page); `list` names the array in the answer. */
  source: { path: string; list: string };
  columns: ColumnSpec[];
  filters?: PanelFilter[];
  rowActions?: RowAction[];
  /**
   * The fields (dotted paths) that name a row in its buttons' accessible names ("Exclude: 01-701-1015
   * SD0021 3"), when the first column alone does not tell the rows apart. @default the first column
   */
  rowName?: string[];
  /** Asked again (at most every 2 s) while the task's counters move. @default false */
  live?: boolean;
  /** Shown when the list is empty. @default 'Nothing to show.' */
  empty?: string;
}

/** A button on a task's page: a request to the app about this task. */
export interface TaskActionSpec {
  label: string;
  method: 'POST' | 'DELETE';
  /** Path under the API base with the `{id}` placeholder. */
  path: string;
  /** Offered only while the task's status is one of these. @default every status */
  when?: string[];
  /**
   * Offered only while the app's answer at `path` (under the API base, `{id}` the task's) has
   * `field` (a dotted path) equal to one of `values`: "Publish" while `/loads/{id}` says its status
   * is `ready`. Asked once `when` holds, again when the task's status or round changes, and after
   * any of the task's app actions ran; not offered while unknown.
   */
  whenApp?: { path: string; field: string; values: string[] };
  confirm?: string;
}

/** A page of the app's own in the top navigation, made of table panels. */
export interface PageSpec {
  title: string;
  /** Its address: `#/pages/<slug>`; `[a-z0-9-]+`. */
  slug: string;
  panels: TablePanel[];
}

/** What an app passes to `consoleRoutes()`. */
export interface ConsoleConfig {
  /** The page title and heading: "ASL full-text extraction". */
  title: string;
  /** Where the app's task API is mounted, on the same origin: `/api/asl`. */
  apiBase: string;
  /** Where the console's scripts and stylesheet are served. @default '/console/' */
  assetsBase?: string;
  /** The app's "new task" panel. */
  newTask: NewTaskPanel;
  /** The app's result columns in the item table. @default [] */
  columns?: ColumnSpec[];
  /** Downloads of a finished task. @default [] */
  exports?: ExportSpec[];
  /** Tables of the app's own data on a task's page. @default [] */
  detailPanels?: TablePanel[];
  /** Buttons of the app's own on a task's page. @default [] */
  taskActions?: TaskActionSpec[];
  /** Pages of the app's own in the navigation. @default [] */
  pages?: PageSpec[];
}

/** The configuration as embedded in the page: every default applied. */
export interface ResolvedConsoleConfig {
  title: string;
  apiBase: string;
  assetsBase: string;
  newTask: NewTaskPanel;
  columns: ColumnSpec[];
  exports: ExportSpec[];
  detailPanels: TablePanel[];
  taskActions: TaskActionSpec[];
  pages: PageSpec[];
}

/** The id of the `<script type="application/json">` element that carries the configuration. */
export const CONFIG_ELEMENT_ID = 'fanout-console-config';
