import { describe, expect, it } from 'vitest';
import { selfReferenceAt, unstorableTextAt } from '../src/route.ts';

// A YAML alias inside its own anchor (`a: &a [*a, *a]`) parses to a list that holds itself twice:
// walked as a tree to 64 levels it was 2^64 calls, and held the process at full CPU.
describe('values parsed from a text', () => {
  const twice: unknown[] = [];
  twice.push(twice, twice);
  const inMap: Record<string, unknown> = { text: 'a\u0000b' };
  inMap.again = { back: inMap };

  it('a value inside itself is found, with its path', () => {
    expect(selfReferenceAt({ a: twice }, 'spec')).toBe('spec.a.0');
    expect(selfReferenceAt(inMap, 'body')).toBe('body.again.back');
    // Shared, not inside itself (an alias used twice): a tree as far as JSON goes.
    const shared = { x: 1 };
    expect(selfReferenceAt({ a: shared, b: [shared, shared] }, 'spec')).toBeNull();
  });

  it('is looked at once for text PostgreSQL refuses', () => {
    expect(unstorableTextAt({ a: twice }, 'spec')).toBeNull();
    expect(unstorableTextAt(inMap, 'body')).toMatchObject({ field: 'body.text', rule: 'nul_character' });
  });
});
