import { z } from 'zod';

// Target names become PostgreSQL identifiers (always quoted); keeping them plain lower-case
// makes them usable without quotes by the people who query the published tables.
const identifier = z.string().regex(/^[a-z_][a-z0-9_]{0,62}$/, { error: 'must be a lower-case identifier: [a-z_][a-z0-9_]*, at most 63 characters' });
const reserved = (name: string) => !name.startsWith('_');

export const COLUMN_TYPES = ['text', 'integer', 'number', 'boolean', 'date', 'timestamp'] as const;
export type ColumnType = (typeof COLUMN_TYPES)[number];

const unitSchema = z
  .object({
    /** The source column holding each row's unit (e.g. `VSORRESU`); or `from` for one unit for all rows. */
    column: z.string().min(1).optional(),
    /** The unit of every value, in UCUM (`[in_i]`), when the file has no unit column. */
    from: z.string().min(1).optional(),
    /** The source's unit strings to UCUM codes: `{ IN: '[in_i]', LB: '[lb_av]', F: '[degF]' }`. */
    map: z.record(z.string(), z.string().min(1)).default({}),
    /** The target unit, or several: each value goes to the first one its unit converts to. */
    to: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    /** A text column added to the target that receives each row's target unit. */
    into: identifier.refine(reserved, { error: 'must not start with "_" (reserved)' }).optional(),
  })
  .strict()
  .refine((u) => (u.column === undefined) !== (u.from === undefined), { error: 'give either column (a unit per row) or from (one unit for all rows)' });

export const columnSchema = z
  .object({
    /** The target column. */
    name: identifier.refine(reserved, { error: 'must not start with "_" (reserved for the load\u2019s own columns)' }),
    /** The source column (header name); several are joined with `join` (a date in three columns). @default name */
    source: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).optional(),
    /** The separator put between several source columns. @default '-' */
    join: z.string().default('-'),
    /** Take one part of the value: `{ separator: '/', index: 0 }` takes 114 from 114/72. */
    split: z.object({ separator: z.string().min(1), index: z.int().min(0) }).strict().optional(),
    type: z.enum(COLUMN_TYPES),
    /** A null is rejected. @default false */
    required: z.boolean().default(false),
    /** Values read as NULL in this column (after trimming), in addition to the spec's own. */
    nullTokens: z.array(z.string()).optional(),
    /** Date formats tried in order: tokens YYYY MM M DD D, `excel` (serial day numbers), `iso`. */
    formats: z.array(z.string().min(1)).min(1).optional(),
    /** The decimal mark of numbers. @default '.' */
    decimal: z.enum(['.', ',']).default('.'),
    trueValues: z.array(z.string()).default(['true', 't', 'yes', 'y', '1']),
    falseValues: z.array(z.string()).default(['false', 'f', 'no', 'n', '0']),
    /** Allowed values: a list, or the name of one of the spec's codelists. */
    codelist: z.union([z.array(z.string()).min(1), identifier]).optional(),
    unit: unitSchema.optional(),
    maxLength: z.int().min(1).optional(),
  })
  .strict();

const ruleSchema = z
  .object({
    id: z.string().regex(/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/, { error: 'must be a rule id: a letter, then letters, digits, _ . -' }),
    /** CEL over the target columns: a row for which it is true is rejected. */
    reject: z.string().min(1).optional(),
    /** CEL over the target columns: a row for which it is false is rejected. */
    assert: z.string().min(1).optional(),
    /** The column the reject is reported against. @default the first column the rule reads */
    column: z.string().optional(),
    message: z.string().max(500).optional(),
  })
  .strict()
  .refine((r) => (r.reject === undefined) !== (r.assert === undefined), { error: 'give either reject (a condition that rejects) or assert (a condition that must hold)' });

export const specSchema = z
  .object({
    /** The spec's own version, recorded in each load's manifest. */
    version: z.union([z.string().min(1).max(100), z.number()]).transform(String),
    /** The published table's name (per tenant). */
    target: identifier,
    source: z
      .object({
        /** @default from the file name (`.tsv`, `.xlsx`, else CSV) */
        format: z.enum(['csv', 'tsv', 'xlsx']).optional(),
        /** One character. @default ',' for CSV, tab for TSV */
        delimiter: z.string().length(1).optional(),
        /** The quote character, or null for none. @default '"' */
        quote: z.string().length(1).nullable().default('"'),
        /** @default detected: a BOM, else UTF-8 when valid, else windows-1252 */
        encoding: z.enum(['utf-8', 'utf-16le', 'utf-16be', 'windows-1252', 'latin1']).optional(),
        /** The line (or spreadsheet row) holding the column names; lines above it are skipped. @default 1 */
        headerRow: z.int().min(1).max(1000).default(1),
        /** The worksheet of a spreadsheet. @default the first */
        sheet: z.string().min(1).optional(),
      })
      .strict()
      .default({ quote: '"', headerRow: 1 }),
    /** Trim spaces (and no-break spaces) around values. @default true */
    trim: z.boolean().default(true),
    /** Values read as NULL in every column (after trimming). @default [''] */
    nullTokens: z.array(z.string()).default(['']),
    codelists: z.record(identifier, z.object({ values: z.array(z.string()).min(1), ignoreCase: z.boolean().default(false) }).strict()).default({}),
    columns: z.array(columnSchema).min(1).max(500),
    rules: z.array(ruleSchema).max(200).default([]),
    dedupe: z
      .object({
        /** Target columns whose values identify a record. */
        key: z.array(z.string()).min(1),
        /** Which record of a group is kept: the first by source line unless ordered otherwise. */
        order: z.array(z.object({ column: z.string(), direction: z.enum(['asc', 'desc']).default('asc') }).strict()).default([]),
      })
      .strict()
      .optional(),
    thresholds: z
      .object({
        /** Fail the load when more than this share of its rows is rejected (0..1). */
        maxRejectRate: z.number().min(0).max(1).optional(),
        /** Fail the load when more than this many rows are rejected. */
        maxRejects: z.int().min(0).optional(),
      })
      .strict()
      .default({}),
    publish: z
      .object({
        /** `replace`: the table holds this load alone afterwards; `append`: its rows are added. @default 'replace' */
        mode: z.enum(['replace', 'append']).default('replace'),
        /** Publish as soon as the load passes its checks; otherwise wait for POST /loads/:id/publish. @default true */
        auto: z.boolean().default(true),
      })
      .strict()
      .default({ mode: 'replace', auto: true }),
  })
  .strict();

export type Spec = z.output<typeof specSchema>;
export type ColumnSpec = z.output<typeof columnSchema>;
