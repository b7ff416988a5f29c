import { describe, expect, it } from 'vitest';
import { areaPath, axisTicks, isolatedPoints, linePath, niceCeiling, scaleY } from '../../src/ui/state/chart.ts';

describe('chart geometry', () => {
  it('rounds the axis up to a nice number', () => {
    expect([0, 0.7, 3, 7, 12, 23, 76, 101, 4300].map(niceCeiling)).toEqual([1, 1, 5, 10, 20, 25, 100, 200, 5000]);
  });

  it('ticks the axis in whole steps of a nice size, up to the first tick at or above the largest value', () => {
    expect(axisTicks(100)).toEqual([0, 25, 50, 75, 100]);
    // No data, or values under one: one step of one, never 0, 0.25, 0.5 (printed 0, 0, 1).
    expect(axisTicks(0)).toEqual([0, 1]);
    expect(axisTicks(0.4)).toEqual([0, 1]);
    expect(axisTicks(3)).toEqual([0, 1, 2, 3]);
    expect(axisTicks(7)).toEqual([0, 2, 4, 6, 8]);
    // A step of 2.5 is not a whole number: 5.
    expect(axisTicks(9)).toEqual([0, 5, 10]);
    expect(axisTicks(12)).toEqual([0, 5, 10, 15]);
    expect(axisTicks(76)).toEqual([0, 20, 40, 60, 80]);
    expect(axisTicks(4300)).toEqual([0, 2000, 4000, 6000]);
    for (const max of [1, 2, 5, 9, 13, 99, 101, 999, 12_345]) {
      const t = axisTicks(max);
      expect(t.length, `${max}`).toBeLessThanOrEqual(5);
      expect(t.at(-1)!, `${max}`).toBeGreaterThanOrEqual(max);
      expect(t.every(Number.isInteger), `${max}`).toBe(true);
    }
  });

  it('draws lines with gaps where a bucket has no data', () => {
    expect(linePath([{ x: 0, y: 10 }, { x: 1, y: 5 }, { x: 2, y: null }, { x: 3, y: 7 }])).toBe('M0.0,10.0L1.0,5.0M3.0,7.0');
    expect(areaPath([{ x: 0, y: 10 }, { x: 2, y: null }], 20)).toBe('M0.0,20.0L0.0,10.0L2.0,20.0L2.0,20.0Z');
  });

  it('finds the points a line cannot show: a value alone between gaps', () => {
    const pts = [{ x: 0, y: 5 }, { x: 1, y: null }, { x: 2, y: 7 }, { x: 3, y: null }, { x: 4, y: 1 }, { x: 5, y: 2 }, { x: 6, y: null }, { x: 7, y: 9 }];
    expect(isolatedPoints(pts).map((p) => p.x)).toEqual([0, 2, 7]);
    expect(isolatedPoints([])).toEqual([]);
  });

  it('puts 0 at the bottom', () => {
    expect(scaleY(0, 100, 10, 110)).toBe(110);
    expect(scaleY(100, 100, 10, 110)).toBe(10);
  });
});
