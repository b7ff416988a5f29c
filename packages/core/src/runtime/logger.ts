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

// Fields whose values are credentials whatever they hold, by name (any casing, any nesting):
// `authorization` and `proxy-authorization`, passwords, secrets (`clientSecret`, `secretKey`), tokens,
// API keys (`x-api-key`), credentials, connection strings, private and access keys. (Names that
// only begin with "secret", `secretName` or `secretArn`, are not credentials.)
const SECRET_KEY =
  /^(.*authorization|cookie|set-cookie|.*password|passwd|pwd|.*passphrase|.*secret|secrets|secret[-_]?key|.*token|.*tokens|.*api[-_]?key|credentials?|connection[-_]?string|database[-_]?url|.*private[-_]?key|.*access[-_]?key)$/i;
// A password inside a URL (`postgres://user:password@host`, `redis://:password@host`).
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@]*):[^\s@/]+@/gi;
// Whatever follows an authorization header written into text (`Authorization: Basic dXNlcjpwYXNz`).
const AUTHORIZATION = /\b((?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|digest|token)\s+)?)(?!\[redacted\])[^\s,;"']+/gi;
// A bearer token elsewhere in text: the scheme as HTTP writes it, then a token of 8 characters or more.
const BEARER = /\b(Bearer\s+)(?!\[redacted\])[A-Za-z0-9\-._~+/]{8,}=*/g;
// A basic credential elsewhere in text: base64 that decodes to `user:password` ("Basic plan" is not one).
const BASIC = /\b(Basic\s+)([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])/g;
// A credential in a query string (`?api_key=…`, `&access_token=…`, an Azure SAS's `sig=…`).
const QUERY_CREDENTIAL = /([?&](?:api[-_]?key|apikey|access[-_]?token|refresh[-_]?token|id[-_]?token|token|password|passwd|secret|client[-_]?secret|sig|signature)=)[^&\s#"']+/gi;
// A credential written as `name: value` or `name=value` in text (`password=hunter2`, `"apiKey":"…"`).
const NAMED_CREDENTIAL = /\b((?:password|passwd|pwd|passphrase|secret|client[-_]?secret|api[-_]?key|apikey|x-api-key|access[-_]?token|auth[-_]?token|refresh[-_]?token)"?\s*[:=]\s*"?)(?!\[redacted\])[^\s,;"'&}]+/gi;
const REDACTED = '[redacted]';
/** Plain-data levels walked; what is deeper is replaced (it could hide a credential). */
const MAX_DEPTH = 8;

/**
 * A string with the credentials it may hold masked: a URL's password, a bearer or basic
 * credential, a credential in a query string or written as `password=…`. NUL characters, which
 * PostgreSQL's text cannot hold, are dropped.
 */
export function redactText(text: string): string {
  const masked = text
    .replace(URL_PASSWORD, `$1:${REDACTED}@`)
    .replace(AUTHORIZATION, `$1${REDACTED}`)
    .replace(BEARER, `$1${REDACTED}`)
    .replace(BASIC, (match, scheme: string, encoded: string) => (Buffer.from(encoded, 'base64').toString('latin1').includes(':') ? `${scheme}${REDACTED}` : match))
    .replace(QUERY_CREDENTIAL, `$1${REDACTED}`)
    .replace(NAMED_CREDENTIAL, `$1${REDACTED}`);
  return masked.includes('\u0000') ? masked.replaceAll('\u0000', '') : masked;
}

/**
 * A log line's data with credentials masked, as plain JSON data: fields named like secrets
 * (`authorization`, `password`, `apiKey`, `*token`, `databaseUrl`…) lose their value, and
 * credentials in text ({@link redactText}) are masked wherever they appear. An `Error` becomes its
 * name, message, code and stack (masked too); a value with `toJSON` (a `Date`, a `Buffer`) its JSON;
 * a `bigint` its digits; a circular reference `[circular]`; what is nested deeper than eight
 * levels `[too deep]`. So a line can always be written, stored and streamed.
 */
export function redact(value: unknown): unknown {
  return redactValue(value, 0, new WeakSet());
}

function redactValue(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (typeof value === 'string') return redactText(value);
  if (typeof value === 'bigint') return value.toString();
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Date) return value;
  if (seen.has(value)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[too deep]';
  seen.add(value);
  try {
    if (value instanceof Error) return redactValue(errorObject(value), depth, seen);
    const json = (value as { toJSON?: unknown }).toJSON;
    if (typeof json === 'function') {
      try {
        return redactValue(json.call(value), depth + 1, seen);
      } catch {
        return '[unreadable]';
      }
    }
    if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1, seen));
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value)) {
      let v: unknown;
      try {
        v = (value as Record<string, unknown>)[key];
      } catch {
        v = '[unreadable]'; // a getter that throws: the line is written all the same
      }
      const masked = SECRET_KEY.test(key) && v !== undefined && v !== null && typeof v !== 'boolean' && typeof v !== 'number' ? REDACTED : redactValue(v, depth + 1, seen);
      // A field named `__proto__` (JSON.parse makes one) stays a field.
      if (key === '__proto__') Object.defineProperty(out, key, { value: masked, enumerable: true, writable: true, configurable: true });
      else out[key] = masked;
    }
    return out;
  } finally {
    // A value seen twice side by side (not inside itself) is written twice, as JSON would.
    seen.delete(value);
  }
}

/** What a log line keeps of an Error. */
function errorObject(error: Error): Record<string, unknown> {
  const code = (error as { code?: unknown }).code;
  return {
    name: error.name,
    message: error.message,
    ...(code !== undefined && code !== null ? { code } : {}),
    ...(error.cause !== undefined ? { cause: error.cause instanceof Error ? error.cause.message : error.cause } : {}),
    ...(error.stack ? { stack: error.stack } : {}),
  };
}

/** Loggers that mask what they write themselves, so {@link maskedLogger} leaves them as they are. */
const MASKS = Symbol('fanout.logger.masks');

/** A logger that masks what it writes: a line function per level, and how its children are made. */
function masking(write: (at: Level) => (message: string, data?: Record<string, unknown>) => void, child: (bindings: Record<string, unknown>) => Logger): Logger {
  const logger: Logger & { [MASKS]: true } = { [MASKS]: true, debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error'), child };
  return logger;
}

/**
 * `logger` with credentials masked before any line reaches it ({@link redactText} on the message,
 * {@link redact} on the data and on a child's bindings): the runtime wraps whatever logger it is
 * given, so a plugged-in logger never writes a password or token the runtime or a handler put in
 * a line. Loggers made by {@link consoleLogger} and {@link pinoLogger} mask already and are
 * returned as they are.
 */
export function maskedLogger(logger: Logger): Logger {
  if ((logger as { [MASKS]?: true })[MASKS]) return logger;
  const write = (at: Level) => (message: string, data?: Record<string, unknown>) =>
    logger[at](redactText(message), data === undefined ? undefined : (redact(data) as Record<string, unknown>));
  return masking(write, (bindings) => maskedLogger(childLogger(logger, redact(bindings) as Record<string, unknown>)));
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
  return masking(write, (more) => consoleLogger(level, { ...bindings, ...more }, options));
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
  /** pino's own: a line below the logger's level is not masked at all. */
  isLevelEnabled?(level: string): boolean;
}

/**
 * A pino logger as a Fanout `Logger`. Credentials in a line are masked as {@link consoleLogger}
 * masks them (pino's own `redact` option can mask more paths on top).
 */
export function pinoLogger(pino: PinoLike): Logger {
  const write = (at: Level) => (message: string, data?: Record<string, unknown>) => {
    if (pino.isLevelEnabled && !pino.isLevelEnabled(at)) return;
    pino[at](data === undefined ? {} : (redact(data) as Record<string, unknown>), redactText(message));
  };
  return masking(write, (bindings) => pinoLogger(pino.child(redact(bindings) as Record<string, unknown>)));
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
