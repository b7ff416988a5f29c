import { describe, expect, it } from 'vitest';
import { sourceDependencies, type FieldSpec } from '../../src/config.ts';
import { formatColumn, valueAt } from '../../src/ui/state/columns.ts';
import { placeIssues } from '../../src/ui/state/issues.ts';
import { buildBody, EMPTY_OPTIONS, initialValues, nextCursorOf, pagePath, sourceEntries, sourcePath, validateValues } from '../../src/ui/state/new-task.ts';
import { newIdempotencyKey } from '../../src/ui/state/idempotency.ts';

const source = { path: '/documents', list: 'documents', value: 'id', label: 'title', detail: 'filename' };
const fields: FieldSpec[] = [
  { kind: 'multiselect', name: 'documentIds', label: 'Papers', source, max: 3 },
  { kind: 'select', name: 'study', label: 'Study', source, required: true },
  { kind: 'text', name: 'note', label: 'Note' },
  { kind: 'number', name: 'sample', label: 'Sample', min: 1, max: 100 },
  { kind: 'file', name: 'upload', label: 'File', upload: { path: '/uploads', idField: 'uploadId' }, required: true },
];

describe('the new-task panel', () => {
  it('starts empty', () => {
    expect(initialValues(fields)).toEqual({ documentIds: [], study: '', note: '', sample: '', upload: null });
  });

  it('checks values before sending, by field', () => {
    const errors = validateValues(fields, { ...initialValues(fields), sample: '500' }, { ...EMPTY_OPTIONS, maxFailures: '1.5', maxFailureRatio: '120', deadlineMinutes: '0' });
    expect(errors).toEqual({
      documentIds: ['Choose at least 1 entry.'],
      study: ['Choose one.'],
      sample: ['Enter 100 or less.'],
      upload: ['Choose a file.'],
      'options.maxFailures': ['Enter a whole number, 0 or more.'],
      'options.maxFailureRatio': ['Enter a percentage from 0 to 100.'],
      'options.deadlineMs': ['Enter a number of minutes above 0.'],
    });
    expect(validateValues(fields, { documentIds: ['a', 'b', 'c', 'd'], study: 's', note: '', sample: '', upload: 'u1' }, null)).toEqual({ documentIds: ['Choose at most 3 entries.'] });
  });

  it('builds the body: input by field name, numbers as numbers, options converted', () => {
    const body = buildBody(fields, { documentIds: ['a', 'b'], study: 's1', note: '', sample: '12', upload: 'u1' }, { maxFailures: '3', maxFailureRatio: '10', deadlineMinutes: '1.5' });
    expect(body).toEqual({ input: { documentIds: ['a', 'b'], study: 's1', sample: 12, upload: 'u1' }, options: { maxFailures: 3, maxFailureRatio: 0.1, deadlineMs: 90_000 } });
    expect(buildBody(fields, { documentIds: ['a'], study: 's', note: 'hi', sample: '', upload: 'u' }, EMPTY_OPTIONS)).toEqual({ input: { documentIds: ['a'], study: 's', note: 'hi', upload: 'u' } });
  });

  it('reads the entries of a source answer', () => {
    const answer = { documents: [{ id: 'd1', title: 'A', filename: 'a.pdf' }, { id: 2, title: null }, { title: 'no id' }, 'junk'] };
    expect(sourceEntries(answer, source)).toEqual([
      { value: 'd1', label: 'A', detail: 'a.pdf' },
      { value: '2', label: '2', detail: null },
    ]);
    expect(() => sourceEntries({ docs: [] }, source)).toThrow(/no list "documents"/);
    // A paged source: the next page's cursor, sent back as `cursor`.
    expect(nextCursorOf({ documents: [], nextCursor: 'abc' }, { ...source, next: 'nextCursor' })).toBe('abc');
    expect(nextCursorOf({ documents: [], nextCursor: null }, { ...source, next: 'nextCursor' })).toBeNull();
    expect(nextCursorOf({ documents: [], nextCursor: 'abc' }, source)).toBeNull();
    expect(pagePath('/documents?limit=1000', null)).toBe('/documents?limit=1000');
    expect(pagePath('/documents?limit=1000', 'a+b/c')).toBe('/documents?limit=1000&cursor=a%2Bb%2Fc');
    expect(pagePath('/documents', 'x')).toBe('/documents?cursor=x');
  });

  it("fills a source's path with the fields it names, and has none while one of them is empty", () => {
    expect(sourceDependencies('/studies/{studyId}/rule-sets?site={site}')).toEqual(['studyId', 'site']);
    expect(sourcePath('/studies/{studyId}/rule-sets', { studyId: 'a/b c' })).toBe('/studies/a%2Fb%20c/rule-sets');
    expect(sourcePath('/studies/{studyId}/rule-sets', { studyId: '' })).toBeNull();
    expect(sourcePath('/studies/{studyId}/rule-sets?site={site}', { studyId: 's1' })).toBeNull();
    expect(sourcePath('/documents', {})).toBe('/documents');
  });

  it('places a 400\'s issues next to their fields', () => {
    const placed = placeIssues(
      [
        { field: 'body.input.documentIds', rule: 'min', message: 'Choose at least one document.' },
        { field: 'body.input.documentIds.3', rule: 'uuid', message: 'Not a document id.' },
        { field: 'body.options.maxFailures', rule: 'int', message: 'Must be an integer.' },
        { field: 'body.input.unknown', rule: 'x', message: 'Unexpected.' },
      ],
      ['documentIds'],
    );
    expect(placed).toEqual({
      byField: { documentIds: ['Choose at least one document.', 'Not a document id.'], 'options.maxFailures': ['Must be an integer.'] },
      general: ['body.input.unknown: Unexpected.'],
    });
  });

  it('makes a fresh UUID per submission', () => {
    const a = newIdempotencyKey();
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(newIdempotencyKey()).not.toBe(a);
  });
});

describe('app columns', () => {
  const item = { snapshot: { filename: 'a.pdf', meta: { pages: 3 } }, result: { fieldsFound: 12345, tookMs: 4200, tags: ['x'] }, error: null };
  it('reads dotted paths', () => {
    expect(valueAt(item, 'snapshot.meta.pages')).toBe(3);
    expect(valueAt(item, 'result.missing.deep')).toBeUndefined();
    expect(valueAt(item, 'error.code')).toBeUndefined();
  });

  it('formats by the column\'s format', () => {
    expect(formatColumn(item, { label: 'File', path: 'snapshot.filename' })).toBe('a.pdf');
    expect(formatColumn(item, { label: 'Found', path: 'result.fieldsFound', format: 'number' })).toBe('12,345');
    expect(formatColumn(item, { label: 'Took', path: 'result.tookMs', format: 'ms' })).toBe('4.2 s');
    expect(formatColumn(item, { label: 'Tags', path: 'result.tags', format: 'json' })).toBe('["x"]');
    expect(formatColumn(item, { label: 'None', path: 'result.none' })).toBe('—');
    const row = { at: '2026-12-04T12:08:20.000Z', odd: 'not a date', year: '42', day: '2026-12-04', local: '2026-12-04T12:08:20' };
    // In the reader's zone (whatever it is here), with the zone said.
    expect(formatColumn(row, { label: 'At', path: 'at', format: 'datetime' })).toMatch(/^2026-12-0[345] \d\d:\d\d:20 UTC/);
    // Not a moment: shown as it is (Date.parse would read "42" as 2042, a date alone as UTC midnight).
    for (const path of ['odd', 'year', 'day', 'local']) expect(formatColumn(row, { label: 'At', path, format: 'datetime' })).toBe((row as Record<string, string>)[path]);
  });
});
