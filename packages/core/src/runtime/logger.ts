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

/** Error details for a log line. */
export function errorFields(error: unknown): Record<string, unknown> {
  if (error instanceof Error) return { error: error.message, errorName: error.name, stack: error.stack };
  return { error: String(error) };
}
