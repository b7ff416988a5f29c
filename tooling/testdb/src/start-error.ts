/**
 * Why PostgreSQL did not start, in one line a person can act on (`could not start PostgreSQL:
 * ...`). The output of initdb or the server that led to it is in `output`, not in the message.
 */
export class PostgresStartError extends Error {
  override readonly name = 'PostgresStartError';
  /** The last lines of initdb's or the server's output (empty when no process ran). */
  readonly output: readonly string[];

  constructor(problem: string, options: { cause?: unknown; output?: readonly string[] } = {}) {
    super(`could not start PostgreSQL: ${problem}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.output = options.output ?? [];
  }
}

/**
 * One line for a person, from anything `startPostgres()` or `localDatabase()` threw: the message
 * of a {@link PostgresStartError}, else the first line of the error's message (with its code when
 * it has one). For `pnpm start`-style entry points: print it and exit 1, no stack.
 */
export function describeStartupError(error: unknown): string {
  if (error instanceof PostgresStartError) return error.message;
  if (error instanceof Error) {
    const first = firstLine(error.message) || error.name;
    const code = (error as NodeJS.ErrnoException).code;
    return typeof code === 'string' && !first.includes(code) ? `${first} (${code})` : first;
  }
  return firstLine(String(error));
}

function firstLine(text: string): string {
  return text.split('\n').find((line) => line.trim() !== '')?.trim() ?? '';
}

const SEVERE = /\b(?:FATAL|PANIC):\s+/;
const ERROR = /\b(?:error|ERROR):\s+/;

/**
 * The line of initdb's or the server's output that says what went wrong: the first FATAL or
 * PANIC (the cause; later lines are consequences), else the last `error:` line, else the last
 * line. Timestamps and program prefixes are dropped.
 */
export function meaningfulLine(lines: readonly string[]): string | undefined {
  const severe = lines.find((line) => SEVERE.test(line));
  if (severe) return severe.replace(/^.*?\b(FATAL|PANIC):\s+/, '$1: ').trim();
  const error = lines.findLast((line) => ERROR.test(line));
  if (error) return error.replace(/^.*?\b(?:error|ERROR):\s+/, '').trim();
  return lines.findLast((line) => line.trim() !== '')?.trim();
}
