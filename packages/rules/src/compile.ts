import { Environment } from '@marcbachmann/cel-js';
import { firstLine, positionOf, RuleCompileError, RuleEvaluationError } from './errors.ts';

/** A function rules may call, with its CEL signature: `isPartialDate(string): bool`. */
export interface RuleFunction {
  signature: string;
  implementation: (...args: any[]) => unknown;
}

export interface CompileOptions {
  /** The rule's id, named in every error. */
  id: string;
  /** Functions beyond CEL's own (dates, codelists...). */
  functions?: readonly RuleFunction[];
  /** Variables the rule may use; any other name is a compile error. @default any name */
  variables?: readonly string[];
  /** Upper bound on the expression's size (nodes of its syntax tree). @default 10000 */
  maxNodes?: number;
}

/** A compiled rule: evaluate it as many times as there are records. */
export interface CompiledRule {
  id: string;
  source: string;
  /** The names of the variables it reads (its free identifiers). */
  variables: readonly string[];
  /** The expression's value for these variables; CEL integers come back as numbers. */
  evaluate(variables: Record<string, unknown>): unknown;
  /** The value as a boolean; anything else is a `RuleEvaluationError`. */
  test(variables: Record<string, unknown>): boolean;
}

interface AstNode {
  op?: string;
  args?: unknown;
  pos?: number;
}

const MACROS = new Set(['all', 'exists', 'exists_one', 'map', 'filter']);

/**
 * The identifiers an expression reads from its variables (`row` in `row.AGE > 1`), with where each
 * is first used; names a macro binds (`v` in `list.exists(v, v > 1)`) are not variables.
 */
function freeIdentifiers(root: unknown): Map<string, number> {
  const used = new Map<string, number>();
  const bound = new Set<string>();
  const walk = (node: unknown) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    const n = node as AstNode;
    if (n.op === 'id' && typeof n.args === 'string') {
      if (!used.has(n.args)) used.set(n.args, n.pos ?? 0);
      return;
    }
    if (n.op === 'rcall' && Array.isArray(n.args) && MACROS.has(n.args[0] as string)) {
      const [first] = (n.args[2] as AstNode[] | undefined) ?? [];
      if (first?.op === 'id' && typeof first.args === 'string') bound.add(first.args);
    }
    for (const value of Object.values(n)) if (value && typeof value === 'object') walk(value);
  };
  walk(root);
  for (const name of bound) used.delete(name);
  return used;
}

const toJs = (value: unknown): unknown => {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(toJs);
  return value;
};

/**
 * Compiles one CEL expression a user wrote (a rule's condition). CEL is not Turing complete and
 * this implementation builds no code from strings, so a rule cannot run code, loop for ever or
 * reach anything but the variables it is given (rules run under
 * `node --disallow-code-generation-from-strings` in the tests to prove it). Compile errors carry
 * the rule's id and the line and column.
 */
export function compileRule(source: string, options: CompileOptions): CompiledRule {
  const env = new Environment({ unlistedVariablesAreDyn: true, limits: { maxAstNodes: options.maxNodes ?? 10_000, maxDepth: 100 } });
  for (const fn of options.functions ?? []) env.registerFunction(fn.signature, fn.implementation);
  if (source.trim() === '') throw new RuleCompileError(options.id, 'the condition is empty', null);
  let parsed: ReturnType<Environment['parse']>;
  try {
    parsed = env.parse(source);
  } catch (error) {
    const pos = (error as { node?: { pos?: number } }).node?.pos;
    throw new RuleCompileError(options.id, firstLine((error as Error).message), typeof pos === 'number' ? positionOf(source, pos) : null);
  }
  const used = freeIdentifiers((parsed as unknown as { ast: unknown }).ast);
  const variables = [...used.keys()];
  if (options.variables) {
    const unknown = variables.find((v) => !options.variables!.includes(v));
    if (unknown !== undefined) {
      throw new RuleCompileError(options.id, `unknown variable "${unknown}" (known: ${options.variables.join(', ')})`, positionOf(source, used.get(unknown)!));
    }
  }
  const evaluate = (vars: Record<string, unknown>) => {
    try {
      return toJs(parsed(vars));
    } catch (error) {
      throw new RuleEvaluationError(options.id, firstLine((error as Error).message));
    }
  };
  return {
    id: options.id,
    source,
    variables,
    evaluate,
    test(vars) {
      const value = evaluate(vars);
      if (typeof value !== 'boolean') throw new RuleEvaluationError(options.id, `the condition gave ${typeof value}, not a boolean`);
      return value;
    },
  };
}
