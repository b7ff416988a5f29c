// How times, durations, rates and numbers are written in the console.

const partsCache = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string | undefined): Intl.DateTimeFormat {
  const key = timeZone ?? '';
  let f = partsCache.get(key);
  if (!f) {
    f = new Intl.DateTimeFormat('en-GB', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'shortOffset',
    });
    partsCache.set(key, f);
  }
  return f;
}

function parts(date: Date, timeZone: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of formatter(timeZone).formatToParts(date)) out[p.type] = p.value;
  return out;
}

/** `GMT+1` → `UTC+1`, `GMT` → `UTC`, `GMT+5:30` → `UTC+5:30`. */
function zoneLabel(name: string | undefined): string {
  if (!name || /^(GMT|UTC)([+-−]0{1,2}(:00)?)?$/.test(name)) return 'UTC';
  return name.replace(/^GMT/, 'UTC').replace('−', '-');
}

/**
 * A date and time with its time zone: `2026-11-30 15:04:05 UTC+1`, in the browser's zone unless
 * one is given. An unreadable date gives `—`.
 */
export function formatDateTime(iso: string | number | null, timeZone?: string): string {
  if (iso === null) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '—';
  const p = parts(date, timeZone);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${zoneLabel(p.timeZoneName)}`;
}

/** The time of day alone: `15:04:05`. */
export function formatTime(iso: string | number | null, timeZone?: string): string {
  if (iso === null) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '—';
  const p = parts(date, timeZone);
  return `${p.hour}:${p.minute}:${p.second}`;
}

/** The browser's time zone as an offset label: `UTC+1`. */
export function zoneOf(date: Date = new Date(), timeZone?: string): string {
  return zoneLabel(parts(date, timeZone).timeZoneName);
}

/** A duration: `850 ms`, `4.2 s`, `3m 05s`, `2h 04m`, `3d 02h`. */
export function formatDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const s = Math.floor(ms / 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
  return `${Math.floor(s / 86_400)}d ${pad(Math.floor((s % 86_400) / 3600))}h`;
}

/** A rate of items: `12 /s`, `3.4 /s`, `18 /min`, `0 /s`. */
export function formatRate(perSecond: number | null): string {
  if (perSecond === null || !Number.isFinite(perSecond)) return '—';
  if (perSecond === 0) return '0 /s';
  if (perSecond >= 10) return `${Math.round(perSecond)} /s`;
  if (perSecond >= 1) return `${perSecond.toFixed(1)} /s`;
  const perMinute = perSecond * 60;
  return `${perMinute >= 10 ? Math.round(perMinute) : perMinute.toFixed(1)} /min`;
}

/** How long ago: `just now`, `12 s ago`, `3 min ago`, `2 h ago`. */
export function formatAgo(iso: string | null, now: number): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return '—';
  const s = Math.round((now - t) / 1000);
  if (s < 2) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86_400)} d ago`;
}

const integer = new Intl.NumberFormat('en-US');

/** A count with thousands separators: `12,345`. */
export const formatCount = (n: number): string => integer.format(n);

/**
 * The short form of a task or item id, as shown and as named in buttons: its first 8 characters
 * (what the search box takes) and its last 6. The ids are UUIDv7, whose first characters are
 * a timestamp: every task submitted within a minute starts alike, and only the random tail tells
 * them apart.
 */
export const shortId = (id: string): string => (id.length > 16 ? `${id.slice(0, 8)}…${id.slice(-6)}` : id);
