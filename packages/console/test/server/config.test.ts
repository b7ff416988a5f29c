import { describe, expect, it } from 'vitest';
import type { ConsoleConfig } from '../../src/config.ts';
import { chooseEncoding } from '../../src/server/encoding.ts';
import { resolveConfig } from '../../src/server/resolve-config.ts';
import { escapeHtml, jsonForScript } from '../../src/server/shell.ts';

const valid: ConsoleConfig = {
  title: 'IIT trial-data QC',
  apiBase: '/api/iit',
  newTask: { title: 'New check', submitLabel: 'Run checks', fields: [{ kind: 'select', name: 'studyId', label: 'Study', source: { path: '/studies', list: 'studies', value: 'id', label: 'name' } }] },
};

describe('resolveConfig', () => {
  it('applies the defaults', () => {
    expect(resolveConfig(valid)).toEqual({ ...valid, assetsBase: '/console/', columns: [], exports: [], detailPanels: [], taskActions: [], pages: [], newTask: { ...valid.newTask, options: false } });
    expect(resolveConfig({ ...valid, assetsBase: '/ui', apiBase: '/api/iit/' })).toMatchObject({ assetsBase: '/ui/', apiBase: '/api/iit' });
  });

  it('names the field and the rule of a mistake', () => {
    const bad = (over: object) => () => resolveConfig({ ...valid, ...over } as ConsoleConfig);
    expect(bad({ title: '' })).toThrow('@fanout/console: config.title must be a non-empty string');
    expect(bad({ apiBase: 'https://elsewhere.example/api' })).toThrow(/config\.apiBase must be a path on the same origin/);
    expect(bad({ apiBase: '//elsewhere' })).toThrow(/config\.apiBase must be a path on the same origin/);
    expect(bad({ apiBase: '/' })).toThrow(/config\.apiBase must not be the site root/);
    expect(bad({ assetsBase: '/' })).toThrow(/config\.assetsBase must not be the site root/);
    expect(bad({ assetsBase: '/con sole/' })).toThrow(/config\.assetsBase may hold only/);
    expect(bad({ columns: [{ label: 'X', path: 'result.x', format: 'csv' }] })).toThrow('config.columns[0].format must be one of text, number, ms, json, datetime, task');
    expect(bad({ exports: [{ label: 'CSV', path: '/tasks/results.csv' }] })).toThrow('config.exports[0].path must contain the {id} placeholder');
    expect(bad({ newTask: { ...valid.newTask, fields: [{ kind: 'radio', name: 'x', label: 'X' }] } })).toThrow(/config\.newTask\.fields\[0\]\.kind must be one of/);
    expect(bad({ newTask: { ...valid.newTask, fields: [{ kind: 'file', name: 'f', label: 'F' }] } })).toThrow('config.newTask.fields[0].upload must be an object { path, idField }');
    expect(bad({ newTask: { ...valid.newTask, fields: [{ kind: 'text', name: 'a', label: 'A' }, { kind: 'text', name: 'a', label: 'B' }] } })).toThrow('config.newTask.fields[1].name repeats the name "a"');
    expect(bad({ newTask: { ...valid.newTask, fields: [{ kind: 'select', name: 's', label: 'S', source: { path: '/x', list: 'x', value: 'id' } }] } })).toThrow('config.newTask.fields[0].source.label must be a non-empty string');
    expect(bad({ newTask: { ...valid.newTask, fields: [{ kind: 'select', name: 's', label: 'S', source: { path: '/x', list: 'x', value: 'id', label: 'n', next: '' } }] } })).toThrow('config.newTask.fields[0].source.next must be a non-empty string');
    // A select's source may name an earlier select; nothing else may.
    const study = valid.newTask.fields[0]!;
    const ruleSet = { kind: 'select', name: 'ruleSetId', label: 'Rule set', source: { path: '/studies/{studyId}/rule-sets', list: 'ruleSets', value: 'id', label: 'label' } } as const;
    expect(resolveConfig({ ...valid, newTask: { ...valid.newTask, fields: [study, ruleSet] } }).newTask.fields).toEqual([study, ruleSet]);
    expect(bad({ newTask: { ...valid.newTask, fields: [ruleSet, study] } })).toThrow('config.newTask.fields[0].source.path names {studyId}, which is not a select field before this one');
    expect(bad({ newTask: { ...valid.newTask, fields: [{ kind: 'text', name: 'studyId', label: 'Study' }, ruleSet] } })).toThrow('config.newTask.fields[1].source.path names {studyId}, which is not a select field before this one');
    expect(bad({ newTask: { ...valid.newTask, fields: [study, { ...ruleSet, source: { ...ruleSet.source, path: '/studies/{study-id}/rule-sets' } }] } })).toThrow(
      'config.newTask.fields[1].source.path may hold { and } only around a field name of letters, digits and _: {studyId}',
    );
    expect(bad({ newTask: { ...valid.newTask, fields: [study, { ...ruleSet, kind: 'multiselect' }] } })).toThrow("config.newTask.fields[1].source.path names the field {studyId}: only a select's source may name another field");
    const panel = { title: 'Rules', source: { path: '/runs/{id}/rules', list: 'rules' }, columns: [{ label: 'Rule', path: 'ruleId' }] };
    expect(bad({ detailPanels: [{ ...panel, source: { path: 'runs', list: 'rules' } }] })).toThrow(/config\.detailPanels\[0\]\.source\.path must be a path on the same origin/);
    expect(bad({ detailPanels: [{ ...panel, rowActions: [{ label: 'Exclude', method: 'PUT', path: '/x/{key}' }] }] })).toThrow('config.detailPanels[0].rowActions[0].method must be one of POST, DELETE');
    expect(bad({ detailPanels: [{ ...panel, filters: [{ name: 'a b', label: 'A' }] }] })).toThrow('config.detailPanels[0].filters[0].name must be a query parameter name (letters, digits, _)');
    expect(bad({ detailPanels: [{ ...panel, rowName: 'subject' }] })).toThrow('config.detailPanels[0].rowName must be an array of strings');
    expect(bad({ detailPanels: [{ ...panel, filters: [{ name: 'subject', label: 'Subject', required: 'yes' }] }] })).toThrow('config.detailPanels[0].filters[0].required must be true or false');
    expect(bad({ taskActions: [{ label: 'Publish', method: 'POST', path: '/loads/publish' }] })).toThrow('config.taskActions[0].path must contain the {id} placeholder');
    const publish = { label: 'Publish', method: 'POST', path: '/loads/{id}/publish' };
    expect(bad({ taskActions: [{ ...publish, whenApp: 'ready' }] })).toThrow('config.taskActions[0].whenApp must be an object { path, field, values }');
    expect(bad({ taskActions: [{ ...publish, whenApp: { path: '/loads', field: 'status', values: ['ready'] } }] })).toThrow('config.taskActions[0].whenApp.path must contain the {id} placeholder');
    expect(bad({ taskActions: [{ ...publish, whenApp: { path: '/loads/{id}/{part}', field: 'status', values: ['ready'] } }] })).toThrow('config.taskActions[0].whenApp.path may hold no placeholder but {id}');
    expect(bad({ taskActions: [{ ...publish, whenApp: { path: 'loads/{id}', field: 'status', values: ['ready'] } }] })).toThrow(/config\.taskActions\[0\]\.whenApp\.path must be a path on the same origin/);
    expect(bad({ taskActions: [{ ...publish, whenApp: { path: '/loads/{id}', field: '', values: ['ready'] } }] })).toThrow('config.taskActions[0].whenApp.field must be a non-empty string');
    expect(bad({ taskActions: [{ ...publish, whenApp: { path: '/loads/{id}', field: 'status', values: 'ready' } }] })).toThrow('config.taskActions[0].whenApp.values must be an array of strings');
    expect(resolveConfig({ ...valid, taskActions: [{ ...publish, whenApp: { path: '/loads/{id}', field: 'status', values: ['ready'] } }] as ConsoleConfig['taskActions'] }).taskActions[0]!.whenApp).toEqual({ path: '/loads/{id}', field: 'status', values: ['ready'] });
    expect(bad({ pages: [{ title: 'Queries', slug: 'Queries!', panels: [] }] })).toThrow('config.pages[0].slug must match [a-z0-9-]+');
    expect(resolveConfig({ ...valid, detailPanels: [panel] }).detailPanels).toEqual([{ ...panel, filters: [], rowActions: [], live: false, empty: 'Nothing to show.' }]);
  });
});

describe('escaping in the shell', () => {
  it('keeps JSON the same data while no `<` can end the script element', () => {
    const value = { title: '</script><!-- & \u2028' };
    const json = jsonForScript(value);
    expect(json).not.toMatch(/[<>&\u2028]/);
    expect(JSON.parse(json)).toEqual(value);
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});

describe('chooseEncoding', () => {
  const both = ['br', 'gzip'] as const;
  it('prefers brotli, honours q=0 and *, and falls back to the plain file', () => {
    expect(chooseEncoding('gzip, deflate, br', both)).toBe('br');
    expect(chooseEncoding('gzip, br;q=0', both)).toBe('gzip');
    expect(chooseEncoding('br;q=0.5, gzip;q=0.8', both)).toBe('gzip');
    expect(chooseEncoding('*', both)).toBe('br');
    expect(chooseEncoding('*;q=0', both)).toBeNull();
    expect(chooseEncoding('identity', both)).toBeNull();
    expect(chooseEncoding(undefined, both)).toBeNull();
    expect(chooseEncoding('br', ['gzip'])).toBeNull();
    expect(chooseEncoding('GZIP', both)).toBe('gzip');
  });
});
