export interface Logger {
  debug(message: string, data?: Record<string, unknown>): void;
  info(message: string, data?: Record<string, unknown>): void;
  warn(message: string, data?: Record<string, unknown>): void;
  error(message: string, data?: Record<string, unknown>): void;
}

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
type Level = (typeof LEVELS)[number];

/** One JSON line per entry on stderr, from `level` up. */
export function consoleLogger(level: Level = 'warn', bindings: Record<string, unknown> = {}): Logger {
  const min = LEVELS.indexOf(level);
  const write = (at: Level) => (message: string, data?: Record<string, unknown>) => {
    if (LEVELS.indexOf(at) < min) return;
    process.stderr.write(`${JSON.stringify({ level: at, time: new Date().toISOString(), msg: message, ...bindings, ...data })}\n`);
  };
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** Fields of an error object worth a log line besides its message (pg-boss adds `queue` and `worker`). */
const CONTEXT_FIELDS = ['queue', 'worker', 'jobId', 'table', 'constraint', 'detail', 'severity', 'address', 'port', 'syscall'];

/** A message for anything thrown: an Error's, a plain object's `message`, or its JSON. */
function messageOf(error: unknown): string {
  if (error instanceof AggregateError && !error.message) return error.errors.map(messageOf).join('; ') || error.name;
  if (error instanceof Error) return error.message || error.name;
  if (typeof error === 'string') return error;
  if (error && typeof error === 'object') {
    const message = (error as { message?: unknown }).message;
    if (typeof message === 'string' && message) return message;
    try {
      return JSON.stringify(error) ?? String(error);
    } catch {
      return `an object with keys ${Object.keys(error).join(', ')}`;
    }
  }
  return String(error);
}

/**
 * Error details for a log line: the message (never `[object Object]`: pg-boss reports errors as
 * plain objects copied from the original, and a refused connection is an AggregateError with an
 * empty message), its name and code, the cause's message, context the error carries (the queue
 * and worker of pg-boss's, the table and constraint of PostgreSQL's), and the stack.
 */
export function errorFields(error: unknown): Record<string, unknown> {
  const fields: Record<string, unknown> = { error: messageOf(error) };
  if (!error || typeof error !== 'object') return fields;
  const e = error as Record<string, unknown>;
  if (typeof e.name === 'string') fields.errorName = e.name;
  if (e.code !== undefined && e.code !== null) fields.errorCode = e.code;
  if (e.cause !== undefined && e.cause !== null) fields.cause = messageOf(e.cause);
  for (const key of CONTEXT_FIELDS) if (e[key] !== undefined && e[key] !== null && typeof e[key] !== 'object') fields[key] = e[key];
  if (typeof e.stack === 'string') fields.stack = e.stack;
  return fields;
}
