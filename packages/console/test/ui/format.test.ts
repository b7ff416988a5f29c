import { describe, expect, it } from 'vitest';
import { formatAgo, formatCount, formatDateTime, formatDuration, formatRate, formatTime, shortId, zoneOf } from '../../src/ui/state/format.ts';

describe('formatDateTime: the time zone is written out', () => {
  const iso = '2026-11-30T14:04:05Z';
  it('writes the zone as an offset from UTC', () => {
    expect(formatDateTime(iso, 'Europe/Berlin')).toBe('2026-11-30 15:04:05 UTC+1');
    expect(formatDateTime('2026-07-01T14:04:05Z', 'Europe/Berlin')).toBe('2026-07-01 16:04:05 UTC+2');
    expect(formatDateTime(iso, 'America/New_York')).toBe('2026-11-30 09:04:05 UTC-5');
    expect(formatDateTime(iso, 'Asia/Kolkata')).toBe('2026-11-30 19:34:05 UTC+5:30');
  });

  it('calls UTC UTC', () => {
    expect(formatDateTime(iso, 'UTC')).toBe('2026-11-30 14:04:05 UTC');
    expect(formatDateTime(iso, 'Atlantic/Reykjavik')).toBe('2026-11-30 14:04:05 UTC');
    expect(zoneOf(new Date(iso), 'UTC')).toBe('UTC');
  });

  it('uses 24-hour time and takes epoch numbers', () => {
    expect(formatDateTime(Date.parse('2026-11-30T00:00:01Z'), 'UTC')).toBe('2026-11-30 00:00:01 UTC');
    expect(formatTime('2026-11-30T23:59:59Z', 'UTC')).toBe('23:59:59');
  });

  it('shows a dash for nothing or garbage', () => {
    expect(formatDateTime(null)).toBe('—');
    expect(formatDateTime('not a date')).toBe('—');
    expect(formatTime(null)).toBe('—');
  });
});

describe('durations, rates, counts', () => {
  it('formats durations for their size', () => {
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(4_230)).toBe('4.2 s');
    expect(formatDuration(42_000)).toBe('42 s');
    expect(formatDuration(185_000)).toBe('3m 05s');
    expect(formatDuration(2 * 3600_000 + 4 * 60_000)).toBe('2h 04m');
    expect(formatDuration(3 * 86_400_000 + 2 * 3600_000)).toBe('3d 02h');
    expect(formatDuration(null)).toBe('—');
  });

  it('writes slow rates per minute', () => {
    expect(formatRate(12.4)).toBe('12 /s');
    expect(formatRate(3.44)).toBe('3.4 /s');
    expect(formatRate(0.3)).toBe('18 /min');
    expect(formatRate(0.05)).toBe('3.0 /min');
    expect(formatRate(0)).toBe('0 /s');
    expect(formatRate(null)).toBe('—');
  });

  it('says how long ago', () => {
    const now = Date.parse('2026-11-30T14:00:00Z');
    expect(formatAgo('2026-11-30T14:00:00Z', now)).toBe('just now');
    expect(formatAgo('2026-11-30T13:59:48Z', now)).toBe('12 s ago');
    expect(formatAgo('2026-11-30T13:57:00Z', now)).toBe('3 min ago');
    expect(formatAgo('2026-11-30T11:00:00Z', now)).toBe('3 h ago');
  });

  it('groups thousands', () => {
    expect(formatCount(12345)).toBe('12,345');
  });
});

describe('shortId', () => {
  it('keeps the random tail of UUIDv7 ids, so ids of one minute stay apart', () => {
    const a = '01a22e60-5a1b-7c2d-8e3f-1234567890ab';
    const b = '01a22e60-5a1b-7c2d-9e3f-abcdef123456';
    expect(shortId(a)).toBe('01a22e60…7890ab');
    expect(shortId(b)).not.toBe(shortId(a));
    expect(shortId('a1b2c3')).toBe('a1b2c3');
  });
});
