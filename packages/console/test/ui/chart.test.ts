import { describe, expect, it } from 'vitest';
import { areaPath, linePath, niceCeiling, scaleY, ticks } from '../../src/ui/state/chart.ts';

describe('chart geometry', () => {
  it('rounds the axis up to a nice number', () => {
    expect([0, 0.7, 3, 7, 12, 23, 76, 101, 4300].map(niceCeiling)).toEqual([1, 1, 5, 10, 20, 25, 100, 200, 5000]);
    expect(ticks(100)).toEqual([0, 25, 50, 75, 100]);
  });

  it('draws lines with gaps where a bucket has no data', () => {
    expect(linePath([{ x: 0, y: 10 }, { x: 1, y: 5 }, { x: 2, y: null }, { x: 3, y: 7 }])).toBe('M0.0,10.0L1.0,5.0M3.0,7.0');
    expect(areaPath([{ x: 0, y: 10 }, { x: 2, y: null }], 20)).toBe('M0.0,20.0L0.0,10.0L2.0,20.0L2.0,20.0Z');
  });

  it('puts 0 at the bottom', () => {
    expect(scaleY(0, 100, 10, 110)).toBe(110);
    expect(scaleY(100, 100, 10, 110)).toBe(10);
  });
});
