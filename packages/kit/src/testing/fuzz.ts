import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';

type Schema = Record<string, any>;

interface Operation {
  method: string;
  path: string;
  parameters: { name: string; in: 'path' | 'query' | 'header'; required?: boolean; schema: Schema }[];
  body: Schema | null;
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

export interface FuzzOptions {
  /** The server: `http://127.0.0.1:<port>`. */
  baseUrl: string;
  /** Where the OpenAPI document is served: `/api/<name>/openapi.json`. */
  documentPath: string;
  /** Tokens of two tenants (`mine`, who sends most requests; `other`, whose data `mine` must never see) and optionally an operator. */
  tokens: { mine: string; other: string; operator?: string };
  /** Strings only the other tenant's data holds (ids, titles, notes): no 2xx answer to anyone else may contain one. */
  secrets: readonly string[];
  /** Values worth putting in path parameters, by name (ids of both tenants): mixed with unknown ids and junk. */
  pathValues?: Record<string, readonly string[]>;
  /** Values worth putting in query parameters, by name. */
  queryValues?: Record<string, readonly string[]>;
  /** Requests per route: routes with a body or a query get `withInput`. @default { plain: 15, withInput: 80 } */
  runs?: { plain: number; withInput: number };
  /** @default 20261130 */
  seed?: number;
  /** Routes left out (`GET /api/x/slow`), e.g. those that start real work per request. */
  skip?: readonly string[];
}

/** A failed answer, with the request that got it. */
export class FuzzFailure extends Error {
  override name = 'FuzzFailure';
}

/**
 * A schema-driven fuzz of every route of an OpenAPI document served by a running API: requests
 * generated from the document's own schemas (valid values, values at and just past their
 * bounds, values that overflow a 32-bit column or a Date, NUL characters, junk), by two tenants,
 * the operator and no one. Fails (fast-check's report, with the request) on the first answer
 * that is a 5xx, a status the document does not list for its route, a JSON body that does not
 * match the documented schema (ajv), or a 2xx showing one of `secrets` to anyone but their owner.
 * Seeded: a failure is reproduced by its seed.
 */
export async function fuzzOpenApi(options: FuzzOptions): Promise<{ operations: number; requests: number }> {
  const document = (await (await fetch(`${options.baseUrl}${options.documentPath}`)).json()) as { paths: Record<string, Record<string, any>> };
  const operations: Operation[] = Object.entries(document.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      parameters: op.parameters ?? [],
      body: op.requestBody?.content?.['application/json']?.schema ?? null,
      responses: op.responses,
    })),
  );
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats.default(ajv);
  const validators = new Map<Schema, ValidateFunction>();
  const validatorOf = (schema: Schema) => {
    let validate = validators.get(schema);
    if (!validate) validators.set(schema, (validate = ajv.compile(schema)));
    return validate;
  };
  const runs = options.runs ?? { plain: 15, withInput: 80 };
  let requests = 0;
  for (const op of operations) {
    if (options.skip?.includes(`${op.method} ${op.path}`)) continue;
    await fc.assert(
      fc.asyncProperty(requestOf(op, options), async (request) => {
        requests++;
        await send(op, request, options, validatorOf, ajv);
      }),
      { numRuns: op.body || op.parameters.some((p) => p.in === 'query') ? runs.withInput : runs.plain, seed: options.seed ?? 20261130, endOnFailure: true },
    );
  }
  return { operations: operations.length, requests };
}

/** Values no schema of ours allows, or that overflow what stores them: one replaces a part of a valid value. */
const BAD_VALUES: readonly unknown[] = [null, -1, 0, 2 ** 31, 3e9, 2 ** 53 - 1, 9e15, -9e15, 1e308, 0.5, '', 'x'.repeat(2000), 'a\u0000b', 'nope', true, [], {}];

/**
 * Values of a JSON schema: valid ones (bounds included, twice as often as values inside them),
 * and valid ones with one part replaced by a bad value or an unknown key added. One mistake at a
 * time: a request with several is refused for the first, and what lies behind it is never reached.
 */
function valueOf(schema: Schema | undefined): fc.Arbitrary<unknown> {
  const valid = validOf(schema, 0);
  const mutated = fc.tuple(valid, fc.nat(), fc.constantFrom(...BAD_VALUES)).map(([value, at, bad]) => mutate(value, at, bad));
  return fc.oneof({ arbitrary: valid, weight: 1 }, { arbitrary: mutated, weight: 1 });
}

/** The paths of a JSON value, the value itself first. */
function pathsOf(value: unknown, path: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(path);
  if (value && typeof value === 'object') for (const [key, child] of Object.entries(value)) pathsOf(child, [...path, Array.isArray(value) ? Number(key) : key], out);
  return out;
}

/** `value` with the part at path number `at` replaced by `bad`, or (for an object) given an unknown key. */
function mutate(value: unknown, at: number, bad: unknown): unknown {
  const paths = pathsOf(value);
  const path = paths[at % paths.length]!;
  if (path.length === 0) return bad;
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let parent = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = path.at(-1)!;
  if (at % 7 === 6 && parent[last] && typeof parent[last] === 'object' && !Array.isArray(parent[last])) (parent[last] as Record<string, unknown>).unexpected = bad;
  else parent[last] = bad;
  return copy;
}

function validOf(schema: Schema | undefined, depth: number): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return fc.jsonValue({ maxDepth: 2 });
  const value = validValueOf(schema, depth);
  return schema.nullable ? fc.oneof({ arbitrary: value, weight: 4 }, { arbitrary: fc.constant(null), weight: 1 }) : value;
}

function validValueOf(schema: Schema, depth: number): fc.Arbitrary<unknown> {
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return fc.oneof(...variants.map((s: Schema) => validOf(s, depth + 1)));
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if ('const' in schema) return fc.constant(schema.const);
  switch (schema.type) {
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? -(2 ** 53 - 1);
      const max = schema.maximum ?? 2 ** 53 - 1;
      const inRange = schema.type === 'integer' ? fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) }) : fc.double({ min, max, noNaN: true });
      // Bounds are where the bugs are: they come up twice as often as values inside them.
      return fc.oneof({ arbitrary: inRange, weight: 1 }, { arbitrary: fc.constantFrom(min, max), weight: 2 });
    }
    case 'boolean':
      return fc.boolean();
    case 'string': {
      if (schema.format === 'uuid') return fc.uuid();
      if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern));
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 60, 60) });
    }
    case 'array':
      return fc.array(validOf(schema.items, depth + 1), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 5, 5) });
    case 'object': {
      const properties: Record<string, Schema> = schema.properties ?? {};
      const required = new Set<string>(schema.required ?? []);
      // Optional keys are there four times in five: a value deep in a body gets its turn.
      return fc
        .record(Object.fromEntries(Object.entries(properties).map(([key, s]) => [key, required.has(key) ? validOf(s, depth + 1) : fc.option(validOf(s, depth + 1), { nil: undefined, freq: 5 })])))
        .map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)));
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

const JUNK_IDS = ['not-an-id', '\u0000', '..', '00000000-0000-0000-0000-000000000000', 'x'.repeat(300)];

/** A path value: one worth trying (both tenants' ids), one of the schema, an unknown id, or junk. */
function pathValueOf(name: string, schema: Schema, known: readonly string[] | undefined): fc.Arbitrary<string> {
  const generated = valueOf(schema).map((v) => (typeof v === 'string' ? v : JSON.stringify(v) ?? 'null'));
  const junk = fc.constantFrom(...JUNK_IDS);
  return known?.length ? fc.oneof({ arbitrary: fc.constantFrom(...known), weight: 3 }, { arbitrary: fc.uuid(), weight: 1 }, { arbitrary: generated, weight: 1 }, { arbitrary: junk, weight: 1 }) : fc.oneof(generated, fc.uuid(), junk);
}

/** A cursor: junk, or one built like a store's keyset cursor with times JavaScript has and PostgreSQL has not. */
const cursorOf = () =>
  fc.oneof(
    fc.string({ maxLength: 60 }),
    fc
      .tuple(fc.constantFrom('-271821-04-20T00:00:00.000Z', '-004714-01-01T00:00:00.000Z', '+275760-09-13T00:00:00.000Z', '2026-11-30T12:00:00.000Z', 'nope'), fc.uuid())
      .map((parts) => Buffer.from(JSON.stringify(parts)).toString('base64url')),
    fc.tuple(fc.oneof(fc.integer(), fc.constantFrom(2 ** 40, -1, 1e300)), fc.uuid()).map((parts) => Buffer.from(JSON.stringify(parts)).toString('base64url')),
  );

/** A valid query value as a client would put in a URL (a cursor: any string is one to the schema). */
function queryValueOf(name: string, schema: Schema, known: readonly string[] | undefined): fc.Arbitrary<string> {
  if (name === 'cursor') return cursorOf();
  const generated = validOf(schema, 0).map((v) => (typeof v === 'string' ? v : JSON.stringify(v) ?? 'null'));
  return known?.length ? fc.oneof(fc.constantFrom(...known), generated) : generated;
}

/** Query values no parameter of ours allows. */
const badQueryValue = fc.oneof(fc.constantFrom('', '-1', '0', '2147483648', '9007199254740993', '1e400', 'NaN', 'true', 'a\u0000b', '%', 'x'.repeat(600)), fc.string({ maxLength: 20 }));

interface Request {
  token: string | null;
  path: string;
  query: [string, string][];
  headers: [string, string][];
  body: { json: unknown } | { raw: string } | null;
}

function requestOf(op: Operation, options: FuzzOptions): fc.Arbitrary<Request> {
  const pathParams = op.parameters.filter((p) => p.in === 'path');
  const queryParams = op.parameters.filter((p) => p.in === 'query');
  const headerParams = op.parameters.filter((p) => p.in === 'header');
  const path = fc
    .tuple(...pathParams.map((p) => pathValueOf(p.name, p.schema, options.pathValues?.[p.name])))
    .map((values) => pathParams.reduce((path, p, i) => path.replace(`{${p.name}}`, encodeURIComponent(values[i]!)), op.path));
  // Valid parameters (each there half the time), or the same with one of them bad.
  const validQuery = fc
    .tuple(...queryParams.map((p) => fc.option(queryValueOf(p.name, p.schema, options.queryValues?.[p.name]), { nil: undefined, freq: 2 })))
    .map((values) => queryParams.flatMap((p, i): [string, string][] => (values[i] === undefined ? [] : [[p.name, values[i]!]])));
  const query = queryParams.length
    ? fc.oneof(
        validQuery,
        fc.tuple(validQuery, fc.nat(), badQueryValue).map(([q, at, bad]): [string, string][] => [...q.filter(([name]) => name !== queryParams[at % queryParams.length]!.name), [queryParams[at % queryParams.length]!.name, bad]]),
      )
    : validQuery;
  // Header values are visible ASCII (fetch refuses others): short ones mostly, sometimes too long or empty.
  const visible = (maxLength: number) => fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), minLength: 1, maxLength });
  const headerValue = fc.oneof({ arbitrary: visible(40), weight: 4 }, { arbitrary: fc.oneof(visible(300), fc.constantFrom('', 'x'.repeat(201))), weight: 1 });
  const headers = fc
    .tuple(...headerParams.map(() => fc.option(headerValue, { nil: undefined })))
    .map((values) => headerParams.flatMap((p, i): [string, string][] => (values[i] === undefined ? [] : [[p.name, values[i]!]])));
  const body = op.body
    ? fc
        .oneof({ arbitrary: valueOf(op.body).map((json) => ({ json })), weight: 8 }, { arbitrary: fc.constantFrom('{', '[]', 'null', '"x"', '{"input":', '\u0000'), weight: 1 })
        .map((b) => (typeof b === 'string' ? { raw: b } : b))
    : fc.constant(null);
  const others = [null, 'wrong-token-0123456789', ...(options.tokens.operator ? [options.tokens.operator] : [])];
  const token = fc.oneof({ arbitrary: fc.constant(options.tokens.mine), weight: 6 }, { arbitrary: fc.constant(options.tokens.other), weight: 2 }, { arbitrary: fc.constantFrom(...others), weight: 1 });
  return fc.record({ token, path, query, headers, body });
}

function check(condition: boolean, message: () => string): asserts condition {
  if (!condition) throw new FuzzFailure(message());
}

async function send(op: Operation, request: Request, options: FuzzOptions, validatorOf: (schema: Schema) => ValidateFunction, ajv: Ajv): Promise<void> {
  const search = new URLSearchParams(request.query).toString();
  const headers: Record<string, string> = Object.fromEntries(request.headers);
  if (request.token) headers.authorization = `Bearer ${request.token}`;
  let body: string | undefined;
  if (request.body) {
    headers['content-type'] = 'application/json';
    body = 'json' in request.body ? (JSON.stringify(request.body.json) ?? 'null') : request.body.raw;
  }
  const res = await fetch(`${options.baseUrl}${request.path}${search ? `?${search}` : ''}`, { method: op.method, headers, ...(body === undefined ? {} : { body }) });
  const who = request.token === options.tokens.mine ? 'mine' : request.token === options.tokens.other ? 'other' : request.token === null ? 'no token' : request.token === options.tokens.operator ? 'operator' : 'a wrong token';
  const where = `${op.method} ${request.path}${search ? `?${search}` : ''} (${who})`;
  const type = res.headers.get('content-type') ?? '';
  const documented = op.responses[String(res.status)];
  if (type.includes('text/event-stream')) {
    await res.body?.cancel();
    check(documented !== undefined, () => `${where}: ${res.status} is not documented`);
    return;
  }
  const text = await res.text();
  check(res.status < 500, () => `${where}: ${res.status} ${text.slice(0, 300)}`);
  check(documented !== undefined, () => `${where}: ${res.status} is not documented (${text.slice(0, 200)})`);
  const schema = documented.content?.['application/json']?.schema;
  if (schema && res.status !== 204) {
    check(type.includes('application/json'), () => `${where}: documented as JSON, answered ${type}`);
    const validate = validatorOf(schema);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      check(false, () => `${where}: not JSON: ${text.slice(0, 200)}`);
    }
    check(validate(json) === true, () => `${where}: the body does not match the document: ${ajv.errorsText(validate.errors)}\n${text.slice(0, 300)}`);
  }
  if (request.token !== options.tokens.other && res.status < 300) {
    for (const secret of options.secrets) check(!text.includes(secret), () => `${where}: shows the other tenant's ${secret}`);
  }
}
