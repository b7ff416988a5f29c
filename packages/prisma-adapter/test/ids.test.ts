import { describe, expect, it } from 'vitest';
import { isUuid, uuidv7 } from '../src/ids.ts';

describe('uuidv7', () => {
  it('keeps creation order within a millisecond', () => {
    const ids = Array.from({ length: 20_000 }, () => uuidv7());
    expect(ids.every(isUuid)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    expect(ids.every((id) => id[14] === '7' && '89ab'.includes(id[19]!))).toBe(true);
  });
});
