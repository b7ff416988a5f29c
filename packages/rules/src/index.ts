export { compileRule } from './compile.ts';
export type { CompiledRule, CompileOptions, RuleFunction } from './compile.ts';
export { positionOf, RuleCompileError, RuleEvaluationError } from './errors.ts';
export type { SourcePosition } from './errors.ts';
