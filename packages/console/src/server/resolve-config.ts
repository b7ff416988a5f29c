import { sourceDependencies, type ColumnSpec, type ConsoleConfig, type ExportSpec, type FieldSpec, type PageSpec, type PanelFilter, type ResolvedConsoleConfig, type RowAction, type Source, type TablePanel, type TaskActionSpec } from '../config.ts';

const FIELD_KINDS = ['multiselect', 'select', 'file', 'text', 'number'] as const;
const FORMATS = ['text', 'number', 'ms', 'json', 'datetime', 'task'] as const;

function fail(field: string, rule: string): never {
  throw new TypeError(`@fanout/console: config.${field} ${rule}`);
}

function text(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim() === '') fail(field, 'must be a non-empty string');
  return value;
}

function path(value: unknown, field: string): string {
  const s = text(value, field);
  // The page's Content-Security-Policy allows only its own origin, so every path is same-origin.
  if (!s.startsWith('/') || s.startsWith('//')) fail(field, `must be a path on the same origin starting with "/" (got ${JSON.stringify(s)})`);
  return s;
}

function optionalNumber(value: unknown, field: string): void {
  if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value))) fail(field, 'must be a finite number when given');
}

function source(value: unknown, field: string): Source {
  if (typeof value !== 'object' || value === null) fail(field, 'must be an object { path, list, value, label }');
  const s = value as Source;
  path(s.path, `${field}.path`);
  text(s.list, `${field}.list`);
  text(s.value, `${field}.value`);
  text(s.label, `${field}.label`);
  if (s.detail !== undefined) text(s.detail, `${field}.detail`);
  if (s.next !== undefined) text(s.next, `${field}.next`);
  return s;
}

function fieldSpec(value: unknown, at: string): FieldSpec {
  if (typeof value !== 'object' || value === null) fail(at, 'must be an object');
  const f = value as FieldSpec;
  if (!(FIELD_KINDS as readonly string[]).includes(f.kind)) fail(`${at}.kind`, `must be one of ${FIELD_KINDS.join(', ')}`);
  text(f.name, `${at}.name`);
  text(f.label, `${at}.label`);
  if (f.kind === 'multiselect' || f.kind === 'select') source(f.source, `${at}.source`);
  if (f.kind === 'multiselect' || f.kind === 'number') {
    optionalNumber(f.min, `${at}.min`);
    optionalNumber(f.max, `${at}.max`);
  }
  if (f.kind === 'file') {
    if (typeof f.upload !== 'object' || f.upload === null) fail(`${at}.upload`, 'must be an object { path, idField }');
    path(f.upload.path, `${at}.upload.path`);
    text(f.upload.idField, `${at}.upload.idField`);
  }
  return f;
}

function column(value: unknown, at: string): ColumnSpec {
  if (typeof value !== 'object' || value === null) fail(at, 'must be an object { label, path, format? }');
  const c = value as ColumnSpec;
  text(c.label, `${at}.label`);
  text(c.path, `${at}.path`);
  if (c.format !== undefined && !(FORMATS as readonly string[]).includes(c.format)) fail(`${at}.format`, `must be one of ${FORMATS.join(', ')}`);
  return c;
}

function exportSpec(value: unknown, at: string): ExportSpec {
  if (typeof value !== 'object' || value === null) fail(at, 'must be an object { label, path }');
  const e = value as ExportSpec;
  text(e.label, `${at}.label`);
  if (!path(e.path, `${at}.path`).includes('{id}')) fail(`${at}.path`, 'must contain the {id} placeholder');
  return e;
}

const METHODS = ['POST', 'DELETE'] as const;

function method(value: unknown, at: string): 'POST' | 'DELETE' {
  if (!(METHODS as readonly unknown[]).includes(value)) fail(at, `must be one of ${METHODS.join(', ')}`);
  return value as 'POST' | 'DELETE';
}

function strings(value: unknown, at: string): string[] {
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) fail(at, 'must be an array of strings');
  return value as string[];
}

function filter(value: unknown, at: string): PanelFilter {
  if (typeof value !== 'object' || value === null) fail(at, 'must be an object { name, label, options? }');
  const f = value as PanelFilter;
  if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(text(f.name, `${at}.name`))) fail(`${at}.name`, 'must be a query parameter name (letters, digits, _)');
  text(f.label, `${at}.label`);
  if (f.required !== undefined && typeof f.required !== 'boolean') fail(`${at}.required`, 'must be true or false');
  return {
    name: f.name,
    label: f.label,
    ...(f.options === undefined ? {} : { options: strings(f.options, `${at}.options`) }),
    ...(f.required ? { required: true } : {}),
  };
}

function rowAction(value: unknown, at: string): RowAction {
  if (typeof value !== 'object' || value === null) fail(at, 'must be an object { label, method, path }');
  const a = value as RowAction;
  text(a.label, `${at}.label`);
  method(a.method, `${at}.method`);
  path(a.path, `${at}.path`);
  if (a.prompt !== undefined) text(a.prompt, `${at}.prompt`);
  if (a.confirm !== undefined) text(a.confirm, `${at}.confirm`);
  if (a.when !== undefined) {
    if (typeof a.when !== 'object' || a.when === null) fail(`${at}.when`, 'must be an object { field, values }');
    text(a.when.field, `${at}.when.field`);
    strings(a.when.values, `${at}.when.values`);
  }
  return a;
}

function tablePanel(value: unknown, at: string): TablePanel {
  if (typeof value !== 'object' || value === null) fail(at, 'must be an object { title, source, columns }');
  const p = value as TablePanel;
  text(p.title, `${at}.title`);
  if (typeof p.source !== 'object' || p.source === null) fail(`${at}.source`, 'must be an object { path, list }');
  path(p.source.path, `${at}.source.path`);
  text(p.source.list, `${at}.source.list`);
  if (p.empty !== undefined) text(p.empty, `${at}.empty`);
  return {
    title: p.title,
    source: { path: p.source.path, list: p.source.list },
    columns: array(p.columns, `${at}.columns`, column),
    filters: array(p.filters, `${at}.filters`, filter),
    rowActions: array(p.rowActions, `${at}.rowActions`, rowAction),
    ...(p.rowName !== undefined ? { rowName: strings(p.rowName, `${at}.rowName`) } : {}),
    live: p.live === true,
    empty: p.empty ?? 'Nothing to show.',
  };
}

function taskAction(value: unknown, at: string): TaskActionSpec {
  if (typeof value !== 'object' || value === null) fail(at, 'must be an object { label, method, path }');
  const a = value as TaskActionSpec;
  text(a.label, `${at}.label`);
  method(a.method, `${at}.method`);
  if (!path(a.path, `${at}.path`).includes('{id}')) fail(`${at}.path`, 'must contain the {id} placeholder');
  if (a.when !== undefined) strings(a.when, `${at}.when`);
  if (a.whenApp !== undefined) {
    if (typeof a.whenApp !== 'object' || a.whenApp === null) fail(`${at}.whenApp`, 'must be an object { path, field, values }');
    if (!path(a.whenApp.path, `${at}.whenApp.path`).includes('{id}')) fail(`${at}.whenApp.path`, 'must contain the {id} placeholder');
    if (/\{(?!id\})/.test(a.whenApp.path)) fail(`${at}.whenApp.path`, 'may hold no placeholder but {id}');
    text(a.whenApp.field, `${at}.whenApp.field`);
    strings(a.whenApp.values, `${at}.whenApp.values`);
  }
  if (a.confirm !== undefined) text(a.confirm, `${at}.confirm`);
  return a;
}

function page(value: unknown, at: string): PageSpec {
  if (typeof value !== 'object' || value === null) fail(at, 'must be an object { title, slug, panels }');
  const p = value as PageSpec;
  text(p.title, `${at}.title`);
  if (!/^[a-z0-9-]+$/.test(text(p.slug, `${at}.slug`))) fail(`${at}.slug`, 'must match [a-z0-9-]+');
  return { title: p.title, slug: p.slug, panels: array(p.panels, `${at}.panels`, tablePanel) };
}

function array<T>(value: unknown, field: string, each: (v: unknown, at: string) => T): T[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) fail(field, 'must be an array');
  return value.map((v, i) => each(v, `${field}[${i}]`));
}

/** Checks an app's console configuration and applies the defaults; throws a TypeError naming the field. */
export function resolveConfig(config: ConsoleConfig): ResolvedConsoleConfig {
  if (typeof config !== 'object' || config === null) throw new TypeError('@fanout/console: config must be an object');
  const title = text(config.title, 'title');
  // A trailing slash would double up with the paths the UI appends ("/tasks").
  const apiBase = path(config.apiBase, 'apiBase').replace(/\/+$/, '');
  if (apiBase === '') fail('apiBase', 'must not be the site root "/": mount the API under a prefix such as "/api"');
  let assetsBase = config.assetsBase === undefined ? '/console/' : path(config.assetsBase, 'assetsBase');
  if (!assetsBase.endsWith('/')) assetsBase += '/';
  if (assetsBase === '/') fail('assetsBase', 'must not be the site root "/"');
  if (!/^[A-Za-z0-9/_.~-]+$/.test(assetsBase)) fail('assetsBase', 'may hold only letters, digits and / _ . ~ -');

  const panel = config.newTask;
  if (typeof panel !== 'object' || panel === null) fail('newTask', 'must be an object { title, submitLabel, fields }');
  text(panel.title, 'newTask.title');
  text(panel.submitLabel, 'newTask.submitLabel');
  const fields = array(panel.fields, 'newTask.fields', fieldSpec);
  const names = new Set<string>();
  const selects = new Set<string>();
  fields.forEach((f, i) => {
    if (names.has(f.name)) fail(`newTask.fields[${i}].name`, `repeats the name ${JSON.stringify(f.name)}`);
    if (f.kind === 'select' || f.kind === 'multiselect') {
      if (/[{}]/.test(f.source.path.replace(/\{[A-Za-z0-9_]+\}/g, ''))) fail(`newTask.fields[${i}].source.path`, 'may hold { and } only around a field name of letters, digits and _: {studyId}');
      for (const name of sourceDependencies(f.source.path)) {
        if (f.kind === 'multiselect') fail(`newTask.fields[${i}].source.path`, `names the field {${name}}: only a select's source may name another field`);
        if (!selects.has(name)) fail(`newTask.fields[${i}].source.path`, `names {${name}}, which is not a select field before this one`);
      }
    }
    names.add(f.name);
    if (f.kind === 'select') selects.add(f.name);
  });

  return {
    title,
    apiBase,
    assetsBase,
    newTask: { title: panel.title, submitLabel: panel.submitLabel, fields, options: panel.options === true },
    columns: array(config.columns, 'columns', column),
    exports: array(config.exports, 'exports', exportSpec),
    detailPanels: array(config.detailPanels, 'detailPanels', tablePanel),
    taskActions: array(config.taskActions, 'taskActions', taskAction),
    pages: array(config.pages, 'pages', page),
  };
}
