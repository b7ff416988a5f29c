import { z } from 'zod';

export const SEVERITIES = ['error', 'warning', 'notice'] as const;
export const LEVELS = ['record', 'subject', 'study'] as const;
export const KINDS = ['cel', 'llm', 'unique', 'consistent', 'outlier', 'orphan'] as const;

const ruleId = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, { error: 'must be letters, digits, _ . - (at most 64), starting with a letter or digit' });
const variable = z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,99}$/, { error: 'must be a variable name' });

/** One rule of a rule set, as written in YAML. */
export const ruleSpec = z
  .object({
    id: ruleId,
    /** A domain (AE), a REDCap form (demographics), or `*` for every dataset with subjects. */
    scope: z.string().min(1).max(64),
    level: z.enum(LEVELS),
    /** cel (a condition, the default), llm (agent review), or a study-level check. */
    kind: z.enum(KINDS).default('cel'),
    severity: z.enum(SEVERITIES),
    message: z.string().min(1).max(500),
    description: z.string().max(4000).optional(),
    /** The same check in other tools: `{ p21: SD0021 }`, `{ redcap: A }`. */
    references: z.record(z.string(), z.string()).optional(),
    /** Only these datasets of the scope (LBCH of LB), when a rule is about one file of a split domain. */
    datasets: z.array(z.string().regex(/^[A-Z][A-Z0-9]{0,7}$/)).min(1).max(100).optional(),
    /** Evaluate once per listed variable: the condition sees `field` and `value`. */
    each: z.array(variable).min(1).max(2000).optional(),
    /** Variables the rule needs; a study without them skips the rule (found in `row.X` too). */
    requires: z.array(variable).max(200).optional(),
    params: z.record(z.string(), z.unknown()).optional(),
    /** CEL: which records the rule looks at (record and study level). */
    when: z.string().max(20_000).optional(),
    /** CEL: true means a discrepancy. */
    condition: z.string().max(20_000).optional(),
    /** kind llm: what the model is asked, and the variables of each record it is shown. */
    prompt: z.string().max(20_000).optional(),
    show: z.array(variable).max(100).optional(),
  })
  .strict()
  .superRefine((rule, ctx) => {
    if ((rule.kind === 'cel' || rule.kind === 'llm') && rule.level === 'study') ctx.addIssue({ code: 'custom', path: ['level'], message: `a ${rule.kind} rule is record or subject level; study-level rules are of kind unique, consistent, outlier or orphan` });
    if (rule.kind !== 'cel' && rule.kind !== 'llm' && rule.level !== 'study') ctx.addIssue({ code: 'custom', path: ['level'], message: `a ${rule.kind} rule is study level` });
    if (rule.kind === 'cel' && !rule.condition) ctx.addIssue({ code: 'custom', path: ['condition'], message: 'a cel rule needs a condition (true means a discrepancy)' });
    if (rule.kind === 'llm' && (!rule.prompt || !rule.show)) ctx.addIssue({ code: 'custom', path: ['prompt'], message: 'an llm rule needs a prompt and the variables to show (show)' });
    if (rule.kind === 'llm' && rule.level !== 'subject') ctx.addIssue({ code: 'custom', path: ['level'], message: 'an llm rule reviews a subject\u2019s records: level subject' });
    const p = rule.params ?? {};
    const isVariable = (value: unknown) => variable.safeParse(value).success;
    if (rule.kind === 'unique' && (!Array.isArray(p.keys) || p.keys.length < 1 || p.keys.length > 6 || !p.keys.every(isVariable))) ctx.addIssue({ code: 'custom', path: ['params', 'keys'], message: 'a unique rule needs params.keys: one to six variables that must be unique together' });
    if (rule.kind === 'consistent' && (!isVariable(p.key) || !isVariable(p.value))) ctx.addIssue({ code: 'custom', path: ['params'], message: 'a consistent rule needs params.key and params.value, variables (one value per key)' });
    if (rule.kind === 'outlier' && !rule.each && !isVariable(p.variable)) ctx.addIssue({ code: 'custom', path: ['params', 'variable'], message: 'an outlier rule needs params.variable (a variable) or each' });
    // A threshold that is no number made the check find nothing, silently (NaN standard deviations).
    // (Written as a number, or as text of one, as it was read before it was checked.)
    const sd = typeof p.sd === 'number' ? p.sd : typeof p.sd === 'string' && p.sd.trim() !== '' ? Number(p.sd) : Number.NaN;
    if (rule.kind === 'outlier' && p.sd !== undefined && !(Number.isFinite(sd) && sd > 0)) ctx.addIssue({ code: 'custom', path: ['params', 'sd'], message: 'params.sd: a number of standard deviations above 0' });
    if (rule.kind === 'outlier' && p.groupBy !== undefined && !isVariable(p.groupBy)) ctx.addIssue({ code: 'custom', path: ['params', 'groupBy'], message: 'params.groupBy: a variable' });
  });

export type RuleSpec = z.output<typeof ruleSpec>;

export const generatorSpec = z
  .object({
    from: z.enum(['define', 'redcap']),
    /** define: codelist, required, length. redcap: A, B, C, D, E, G, H. */
    checks: z.array(z.string()).min(1),
    severity: z.enum(SEVERITIES).optional(),
    /** REDCap rule E: how many standard deviations from the mean. @default 2 */
    sd: z.number().positive().optional(),
  })
  .strict();

export const ruleSetSpec = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9 _.-]{0,99}$/, { error: 'must be letters, digits, space, _ . - (at most 100)' }),
    description: z.string().max(4000).optional(),
    /** Issues kept per rule in the report's details, as Pinnacle 21 does (the count stays exact). @default 1000 */
    maxIssuesPerRule: z.number().int().min(1).max(100_000).default(1000),
    generate: z.array(generatorSpec).max(10).optional(),
    rules: z.array(z.unknown()).max(20_000).default([]),
  })
  .strict();
