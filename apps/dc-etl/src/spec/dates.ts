/** Parses one text value into an ISO date (`YYYY-MM-DD`), or null when it does not match. */
export type DateParser = (text: string) => string | null;

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

function validDate(year: number, month: number, day: number): string | null {
  if (month < 1 || month > 12 || day < 1 || year < 1 || year > 9999) return null;
  const days = new Date(Date.UTC(2000, month, 0)).getUTCDate(); // February of a leap year: 29
  if (day > days) return null;
  if (month === 2 && day === 29 && !(year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0))) return null;
  return `${pad(year, 4)}-${pad(month)}-${pad(day)}`;
}

// Spreadsheets count days from 1899-12-30 (Lotus's leap-year bug folded in); serials below 61
// predate the bug and no clinical date needs them.
const EXCEL_EPOCH = Date.UTC(1899, 11, 30);
function excelSerial(text: string): string | null {
  if (!/^\d{5}(\.\d+)?$/.test(text)) return null;
  const date = new Date(EXCEL_EPOCH + Math.floor(Number(text)) * 86_400_000);
  return validDate(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate());
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * Compiles a date format: tokens `YYYY`, `MM`/`M`, `DD`/`D`, anything else literal; or `iso`
 * (a date, optionally with a time, which is dropped) or `excel` (serial day numbers). Throws
 * with the reason for a format without a year, month and day.
 */
export function compileDateFormat(format: string): DateParser {
  if (format === 'iso') {
    return (text) => {
      const m = ISO.exec(text);
      return m ? validDate(Number(m[1]), Number(m[2]), Number(m[3])) : null;
    };
  }
  if (format === 'excel') return excelSerial;
  const order: ('y' | 'm' | 'd')[] = [];
  const pattern = format.replace(/YYYY|MM|M|DD|D|[.*+?^${}()|[\]\\]/g, (token) => {
    switch (token) {
      case 'YYYY':
        order.push('y');
        return '(\\d{4})';
      case 'MM':
        order.push('m');
        return '(\\d{2})';
      case 'M':
        order.push('m');
        return '(\\d{1,2})';
      case 'DD':
        order.push('d');
        return '(\\d{2})';
      case 'D':
        order.push('d');
        return '(\\d{1,2})';
      default:
        return `\\${token}`;
    }
  });
  if (order.length !== 3 || new Set(order).size !== 3) throw new Error(`"${format}" needs a year (YYYY), a month (MM or M) and a day (DD or D), each once; or "iso" or "excel"`);
  const regex = new RegExp(`^${pattern}$`);
  const yi = order.indexOf('y') + 1;
  const mi = order.indexOf('m') + 1;
  const di = order.indexOf('d') + 1;
  return (text) => {
    const m = regex.exec(text);
    return m ? validDate(Number(m[yi]), Number(m[mi]), Number(m[di])) : null;
  };
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** An ISO 8601 timestamp (UTC when it has no offset) as PostgreSQL reads it, or null. */
export function parseTimestamp(text: string): string | null {
  if (!TIMESTAMP.test(text)) return null;
  const withZone = /(Z|[+-]\d{2}:?\d{2})$/.test(text) ? text : `${text}Z`;
  const ms = Date.parse(withZone.replace(' ', 'T'));
  if (Number.isNaN(ms) || validDate(Number(text.slice(0, 4)), Number(text.slice(5, 7)), Number(text.slice(8, 10))) === null) return null;
  return new Date(ms).toISOString();
}
