import { describe, expect, it } from 'vitest';
import { fillPath, withQuery } from '../../src/ui/state/template.ts';

describe('path templates of the app panels', () => {
  it('fills placeholders from a row, encoded, with dotted paths', () => {
    expect(fillPath('/discrepancies/{key}/exclusion', { key: 'AE/0001 #2' })).toBe('/discrepancies/AE%2F0001%20%232/exclusion');
    expect(fillPath('/runs/{id}/subjects/{subject.id}', { id: 't1', subject: { id: 7 } })).toBe('/runs/t1/subjects/7');
  });

  it('gives null when a placeholder has no value, so the action is not offered', () => {
    expect(fillPath('/queries/{queryId}/close', { key: 'x' })).toBeNull();
    expect(fillPath('/queries/{queryId}/close', { queryId: '' })).toBeNull();
  });

  it('adds the non-empty query parameters', () => {
    expect(withQuery('/rules', { status: 'open', site: '', cursor: null })).toBe('/rules?status=open');
    expect(withQuery('/rules?limit=50', { cursor: 'abc' })).toBe('/rules?limit=50&cursor=abc');
    expect(withQuery('/rules', {})).toBe('/rules');
  });
});
