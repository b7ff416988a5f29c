import { trace } from '@opentelemetry/api';

export interface Logger {
  debug(message: string, data?: Record<string, unknown>): void;
  info(message: string, data?: Record<string, unknown>): void;
  warn(message: string, data?: Record<string, unknown>): void;
  error(message: string, data?: Record<string, unknown>): void;
  /** A logger whose every line also carries `bindings` (pino's `child`). Optional: see {@link childLogger}. */
  child?(bindings: Record<string, unknown>): Logger;
}

const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
type Level = (typeof LEVELS)[number];

// Fields whose values are credentials whatever they hold, by name (any casing, any nesting).
const SECRET_KEY = /^(authorization|cookie|set-cookie|password|passwd|secret|.*token|.*tokens|api[-_]?key|.*apikey|.*secret|.*password|connection[-_]?string|database[-_]?url|private[-_]?key)$/i;
// A password inside a connection URL (`postgres://user:password@host`).
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]+):[^\s@/]+@/gi;
// A bearer token written into a message.
const BEARER = /\b(Bearer\s+)[^\s,;"']+/gi;
const REDACTED = '[redacted]';

/** A string with the credentials it may hold (a URL's password, a bearer token) masked. */
export function redactText(text: string): string {
  return text.replace(URL_PASSWORD, `$1:${REDACTED}@`).replace(BEARER, `$1${REDACTED}`);
}

/**
 * A log line's data with credentials masked: fields named like secrets (`authorization`,
 * `password`, `apiKey`, `*token`, `databaseUrl`…) lose their value, and passwords in URLs and bearer
 * tokens in text are masked wherever they appear. Walks plain objects and arrays a few levels deep.
 */
export function redact(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value === null || typeof value !== 'object' || depth > 5) return value;
  if (Array.isArray(value)) return value.map((v) => redact(v, depth + 1));
  if (value instanceof Date) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) out[key] = SECRET_KEY.test(key) && v !== undefined && v !== null && typeof v !== 'boolean' && typeof v !== 'number' ? REDACTED : redact(v, depth + 1);
  return out;
}

export interface ConsoleLoggerOptions {
  /** Where each JSON line goes. @default process.stderr */
  write?: (line: string) => void;
}

/**
 * One JSON line per entry (`level`, `time`, `msg`, the bindings, the data) on stderr, from `level`
 * up. Lines written inside a span carry its `traceId` and `spanId`; credentials are masked
 * ({@link redact}). `child` adds bindings, as pino's does.
 */
export function consoleLogger(level: Level = 'warn', bindings: Record<string, unknown> = {}, options: ConsoleLoggerOptions = {}): Logger {
  const min = LEVELS.indexOf(level);
  const out = options.write ?? ((line: string) => void process.stderr.write(line));
  const write = (at: Level) => (message: string, data?: Record<string, unknown>) => {
    if (LEVELS.indexOf(at) < min) return;
    const span = trace.getActiveSpan()?.spanContext();
    const correlation = span && span.traceId !== '00000000000000000000000000000000' ? { traceId: span.traceId, spanId: span.spanId } : {};
    const line = redact({ level: at, time: new Date().toISOString(), msg: message, ...bindings, ...correlation, ...data });
    out(`${JSON.stringify(line)}\n`);
  };
  return {
    debug: write('debug'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    child: (more) => consoleLogger(level, { ...bindings, ...more }, options),
  };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silentLogger };

/** A logger whose lines also carry `bindings`: the logger's own `child` when it has one. */
export function childLogger(logger: Logger, bindings: Record<string, unknown>): Logger {
  if (logger.child) return logger.child(bindings);
  const merge = (data?: Record<string, unknown>) => ({ ...bindings, ...data });
  return {
    debug: (m, d) => logger.debug(m, merge(d)),
    info: (m, d) => logger.info(m, merge(d)),
    warn: (m, d) => logger.warn(m, merge(d)),
    error: (m, d) => logger.error(m, merge(d)),
    child: (more) => childLogger(logger, { ...bindings, ...more }),
  };
}

/** The structural shape of a pino logger (`logger.info(obj, msg)`). */
export interface PinoLike {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): PinoLike;
}

/** A pino logger as a Fanout `Logger` (pino's own `redact` option masks what you configure it to). */
export function pinoLogger(pino: PinoLike): Logger {
  return {
    debug: (m, d) => pino.debug(d ?? {}, m),
    info: (m, d) => pino.info(d ?? {}, m),
    warn: (m, d) => pino.warn(d ?? {}, m),
    error: (m, d) => pino.error(d ?? {}, m),
    child: (bindings) => pinoLogger(pino.child(bindings)),
  };
}

/** The ids a runtime line about a task carries. */
export function taskFields(task: { kind: string; id: string }): { definition: string; taskId: string } {
  return { definition: task.kind, taskId: task.id };
}

/** The ids a runtime line about an item's attempt carries. */
export function itemFields(item: { kind: string; taskId: string; itemId: string; attempt: number }): { definition: string; taskId: string; itemId: string; attempt: number } {
  return { definition: item.kind, taskId: item.taskId, itemId: item.itemId, attempt: item.attempt };
}

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
