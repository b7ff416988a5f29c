import { describe, expect, it } from 'vitest';
import { parseRoute, routeHash, tokenFromFragment, type Route } from '../../src/ui/state/route.ts';
import { listQuery, matchesList, searchQuery, tabCount } from '../../src/ui/state/tabs.ts';
import { task } from './fixtures.ts';

describe('hash routes', () => {
  it('reads the list, a task and the operations view', () => {
    expect(parseRoute('')).toEqual({ view: 'tasks', tab: 'all', q: '' });
    expect(parseRoute('#/')).toEqual({ view: 'tasks', tab: 'all', q: '' });
    expect(parseRoute('#/tasks?tab=failed&q=0193')).toEqual({ view: 'tasks', tab: 'failed', q: '0193' });
    expect(parseRoute('#/tasks?tab=bogus')).toEqual({ view: 'tasks', tab: 'all', q: '' });
    expect(parseRoute('#/tasks/0193abcd-0000')).toEqual({ view: 'task', id: '0193abcd-0000', items: 'all' });
    expect(parseRoute('#/tasks/0193abcd-0000?items=waiting')).toEqual({ view: 'task', id: '0193abcd-0000', items: 'waiting' });
    expect(parseRoute('#/ops')).toEqual({ view: 'ops' });
    expect(parseRoute('#/nowhere')).toEqual({ view: 'unknown', hash: '/nowhere' });
  });

  it('writes what it reads', () => {
    const routes: Route[] = [
      { view: 'tasks', tab: 'all', q: '' },
      { view: 'tasks', tab: 'archived', q: 'abcd' },
      { view: 'task', id: '0193abcd-0000-7000-8000-000000000001', items: 'failed' },
      { view: 'task', id: 'x', items: 'all' },
      { view: 'ops' },
    ];
    for (const r of routes) expect(parseRoute(routeHash(r))).toEqual(r);
  });

  it('finds a sign-in token in the fragment, never in a route', () => {
    expect(tokenFromFragment('#token=abc')).toBe('abc');
    expect(tokenFromFragment('#token=a%2Bb')).toBe('a+b');
    expect(tokenFromFragment('#/tasks?token=abc')).toBeNull();
    expect(tokenFromFragment('')).toBeNull();
  });
});

describe('status tabs', () => {
  const summary = { queued: 1, running: 2, stopping: 1, completed: 7, failed: 1, cancelled: 2, archived: 4 };
  it('counts each tab from the summary', () => {
    expect(tabCount('all', summary)).toBe(14);
    expect(tabCount('active', summary)).toBe(4);
    expect(tabCount('completed', summary)).toBe(7);
    expect(tabCount('archived', summary)).toBe(4);
  });

  it('asks the API for a tab, a search and a page', () => {
    expect(listQuery('all', '', null)).toBe('?limit=50');
    expect(listQuery('active', '0193', 'c1')).toBe('?status=active&q=0193&limit=50&cursor=c1');
    expect(listQuery('archived', 'zz', null)).toBe('?archived=true&limit=50');
  });

  it('searches only with 4 hex characters or more', () => {
    expect(searchQuery('019')).toBeNull();
    expect(searchQuery(' 0193AB ')).toBe('0193ab');
    expect(searchQuery('0193abcd-00')).toBe('0193abcd-00');
    expect(searchQuery('nope')).toBeNull();
  });

  it('places a task submitted elsewhere in the lists it belongs to', () => {
    const queued = task({ status: 'queued' });
    expect(matchesList(queued, 'all', '')).toBe(true);
    expect(matchesList(queued, 'active', '')).toBe(true);
    expect(matchesList(queued, 'completed', '')).toBe(false);
    expect(matchesList(queued, 'archived', '')).toBe(false);
    expect(matchesList(queued, 'all', '0193ab')).toBe(true);
    expect(matchesList(queued, 'all', 'ffff')).toBe(false);
  });
});
