/** Where in a rule's source a problem is: 0-based offset, 1-based line and column. */
export interface SourcePosition {
  offset: number;
  line: number;
  column: number;
}

export function positionOf(source: string, offset: number): SourcePosition {
  const before = source.slice(0, Math.max(0, Math.min(offset, source.length)));
  const lines = before.split('\n');
  return { offset, line: lines.length, column: lines.at(-1)!.length + 1 };
}

/** A rule that does not compile: its id, what is wrong, and where. The message is one line. */
export class RuleCompileError extends Error {
  override name = 'RuleCompileError';
  readonly ruleId: string;
  readonly reason: string;
  readonly position: SourcePosition | null;

  constructor(ruleId: string, reason: string, position: SourcePosition | null) {
    super(`rule ${ruleId}: ${reason}${position ? ` at line ${position.line}, column ${position.column}` : ''}`);
    this.ruleId = ruleId;
    this.reason = reason;
    this.position = position;
  }
}

/** A rule that failed on one input (a missing field, a type the rule did not expect). */
export class RuleEvaluationError extends Error {
  override name = 'RuleEvaluationError';
  readonly ruleId: string;
  readonly reason: string;

  constructor(ruleId: string, reason: string) {
    super(`rule ${ruleId}: ${reason}`);
    this.ruleId = ruleId;
    this.reason = reason;
  }
}

/** The first line of a CEL library message (the rest is a drawing of the source). */
export const firstLine = (message: string) => message.split('\n')[0]!.trim();
