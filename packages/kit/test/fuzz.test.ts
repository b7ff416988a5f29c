import { randomUUID } from 'node:crypto';
import { waitFor } from '@fanout/testdb';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiPrefix } from '../src/index.ts';
import { appTest, TEST_TOKEN, type AppTestOf } from '../src/testing/index.ts';
import echo from './fixtures/echo-app.ts';

// A schema-driven fuzz of every route in the served OpenAPI document, against a real API process
// of the kit's echo app with a worker process: requests generated from the document's own
// schemas (valid values, values at and past their bounds, and junk), sent by two tenants (and
// no one). Every answer must be a status the document lists for its route, never a 5xx, with a
// JSON body matching the documented schema, and no answer to tenant B may show tenant A's data.

type Schema = Record<string, any>;
interface Operation {
  method: string;
  path: string;
  parameters: { name: string; in: 'path' | 'query' | 'header'; required: boolean; schema: Schema }[];
  body: Schema | null;
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

// Routes that read a body or a query get more runs: that is where the numbers are.
const RUNS = { plain: 20, withInput: 120 };
// A fixed seed keeps the run reproducible; FANOUT_FUZZ_SEED explores others.
const SEED = Number(process.env.FANOUT_FUZZ_SEED ?? 20261130);

let t: AppTestOf<typeof echo>;
let operations: Operation[] = [];
/** Ids and texts only tenant A has. */
const secrets: string[] = [];
/** Ids of each tenant, to put in paths. */
const ids = { a: { tasks: [] as string[], items: [] as string[] }, b: { tasks: [] as string[], items: [] as string[] } };
const ajv = new Ajv({ strict: false, allErrors: true });
addFormats.default(ajv);
const validators = new Map<Schema, ValidateFunction>();

async function finishedTask(token: string, count: number): Promise<{ id: string; items: string[] }> {
  const res = await t.call('POST', '/tasks', { token, body: { input: { count } } });
  const { id } = (await res.json()) as { id: string };
  await waitFor(async () => ((await (await t.call('GET', `/tasks/${id}`, { token })).json()) as { status: string }).status === 'completed', { message: `task ${id}` });
  const items = ((await (await t.call('GET', `/tasks/${id}/items`, { token })).json()) as { items: { id: string }[] }).items.map((i) => i.id);
  return { id, items };
}

beforeAll(async () => {
  t = await appTest(echo);
  // Refused tokens are part of the fuzz: counting them would soon refuse every request (429).
  await t.api({ FANOUT_AUTH_FAILURES_PER_MINUTE: 0 });
  const workers = await t.workers(1);
  for (const [tenant, token] of [['a', TEST_TOKEN.a], ['b', TEST_TOKEN.b]] as const) {
    for (const count of [3, 2]) {
      const task = await finishedTask(token, count);
      ids[tenant].tasks.push(task.id);
      ids[tenant].items.push(...task.items);
    }
  }
  const mark = `secret-of-a-${randomUUID()}`;
  expect((await t.call('POST', `/marks/${ids.a.tasks[0]}`, { body: { text: mark } })).status).toBe(201);
  secrets.push(...ids.a.tasks, ...ids.a.items, mark);
  // Tasks the fuzz submits stay queued: up to 10,000 echoes each would only slow the run down.
  await Promise.all(workers.map((w) => w.stop()));
  const doc = (await (await t.call('GET', '/openapi.json', { token: null })).json()) as { paths: Record<string, Record<string, any>> };
  operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      parameters: op.parameters ?? [],
      body: op.requestBody?.content?.['application/json']?.schema ?? null,
      responses: op.responses,
    })),
  );
});

afterAll(async () => {
  await t?.[Symbol.asyncDispose]();
});

/** Values of a JSON schema: mostly valid ones, their bounds and just past them, sometimes anything. */
function valueOf(schema: Schema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return fc.jsonValue({ maxDepth: 2 });
  const anything = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom(null, -1, 0, 2 ** 31, 3e9, 2 ** 53 - 1, 9e15, 1e308, '', 'x'.repeat(2000), '\u0000', [], {}));
  const valid = validValueOf(schema, depth);
  const withNull = schema.nullable ? fc.oneof(valid, fc.constant(null)) : valid;
  return fc.oneof({ arbitrary: withNull, weight: 4 }, { arbitrary: anything, weight: 1 });
}

function validValueOf(schema: Schema, depth: number): fc.Arbitrary<unknown> {
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return fc.oneof(...variants.map((s: Schema) => valueOf(s, depth + 1)));
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if ('const' in schema) return fc.constant(schema.const);
  switch (schema.type) {
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? -(2 ** 53 - 1);
      const max = schema.maximum ?? 2 ** 53 - 1;
      // The schema's bounds and just past them, and what overflows a 32-bit column or a Date.
      const edges = fc.constantFrom(min, max, min - 1, max + 1, 0, 2 ** 31, 3e9, 2 ** 53 - 1, 9e15);
      const inRange = schema.type === 'integer' ? fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) }) : fc.double({ min, max, noNaN: true });
      return fc.oneof(inRange, edges);
    }
    case 'boolean':
      return fc.boolean();
    case 'string': {
      if (schema.format === 'uuid') return fc.uuid();
      if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      if (schema.pattern) return fc.oneof(fc.stringMatching(new RegExp(schema.pattern)), fc.string({ maxLength: 40 }));
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 60, 60) });
    }
    case 'array':
      return fc.array(valueOf(schema.items, depth + 1), { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 5, 5) });
    case 'object': {
      const properties: Record<string, Schema> = schema.properties ?? {};
      const required = new Set<string>(schema.required ?? []);
      // Optional keys are there four times in five: a value deep in a body gets its turn.
      const record = fc
        .record(Object.fromEntries(Object.entries(properties).map(([key, s]) => [key, required.has(key) ? valueOf(s, depth + 1) : fc.option(valueOf(s, depth + 1), { nil: undefined, freq: 5 })])))
        .map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined)));
      // Sometimes a key the schema does not know.
      return fc.oneof({ arbitrary: record, weight: 9 }, { arbitrary: record.map((r) => ({ ...r, unexpected: true })), weight: 1 });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** A task or item id: the caller's, the other tenant's, unknown, or not an id at all. */
const idOf = (kind: 'tasks' | 'items') =>
  fc.oneof(fc.constantFrom(...ids.a[kind]), fc.constantFrom(...ids.b[kind]), fc.uuid(), fc.constantFrom('not-an-id', '%00', '..', '00000000-0000-0000-0000-000000000000'));

/** A cursor: junk, or one built like the store's with times JavaScript has and PostgreSQL has not. */
const cursorOf = () =>
  fc.oneof(
    fc.string({ maxLength: 60 }),
    fc
      .tuple(fc.constantFrom('-271821-04-20T00:00:00.000Z', '-004714-01-01T00:00:00.000Z', '+275760-09-13T00:00:00.000Z', '2026-11-30T12:00:00.000Z', 'nope'), fc.uuid())
      .map((parts) => Buffer.from(JSON.stringify(parts)).toString('base64url')),
    fc.tuple(fc.oneof(fc.integer(), fc.constantFrom(2 ** 40, -1, 1e300)), fc.uuid()).map((parts) => Buffer.from(JSON.stringify(parts)).toString('base64url')),
  );

/** A query value as a client would put in a URL. */
function queryValueOf(name: string, schema: Schema): fc.Arbitrary<string> {
  if (name === 'cursor') return cursorOf();
  if (name === 'task') return idOf('tasks');
  return fc.oneof(valueOf(schema).map((v) => (typeof v === 'string' ? v : JSON.stringify(v))), fc.string({ maxLength: 20 }));
}

interface Request {
  token: string | null;
  path: string;
  query: [string, string][];
  headers: [string, string][];
  body: { json: unknown } | { raw: string } | null;
}

function requestOf(op: Operation): fc.Arbitrary<Request> {
  const pathParams = op.parameters.filter((p) => p.in === 'path');
  const queryParams = op.parameters.filter((p) => p.in === 'query');
  const headerParams = op.parameters.filter((p) => p.in === 'header');
  const path = fc
    .tuple(...pathParams.map((p) => (p.name === 'id' ? idOf('tasks') : p.name === 'itemId' ? idOf('items') : valueOf(p.schema).map(String))))
    .map((values) => pathParams.reduce((path, p, i) => path.replace(`{${p.name}}`, encodeURIComponent(values[i] as string)), op.path));
  const query = fc
    .tuple(...queryParams.map((p) => fc.option(queryValueOf(p.name, p.schema), { nil: undefined })))
    .map((values) => queryParams.flatMap((p, i): [string, string][] => (values[i] === undefined ? [] : [[p.name, values[i]!]])));
  // Header values are visible ASCII (fetch refuses others), of any length.
  const headerValue = fc.oneof(fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 300 }), fc.constantFrom('', 'x'.repeat(201)));
  const headers = fc
    .tuple(...headerParams.map(() => fc.option(headerValue, { nil: undefined })))
    .map((values) => headerParams.flatMap((p, i): [string, string][] => (values[i] === undefined ? [] : [[p.name, values[i]!]])));
  const body = op.body
    ? fc.oneof(
        { arbitrary: valueOf(op.body).map((json) => ({ json })), weight: 6 },
        { arbitrary: fc.constantFrom('{', '[]', 'null', '"x"', '{"input":', '\u0000'), weight: 1 },
      ).map((b) => (typeof b === 'string' ? { raw: b } : b))
    : fc.constant(null);
  const token = fc.oneof({ arbitrary: fc.constant(TEST_TOKEN.b), weight: 6 }, { arbitrary: fc.constant(TEST_TOKEN.a), weight: 2 }, { arbitrary: fc.constantFrom(null, 'wrong-token-0123456789', TEST_TOKEN.ops), weight: 1 });
  return fc.record({ token, path, query, headers, body });
}

function validatorOf(schema: Schema): ValidateFunction {
  let validate = validators.get(schema);
  if (!validate) validators.set(schema, (validate = ajv.compile(schema)));
  return validate;
}

async function send(op: Operation, request: Request): Promise<void> {
  const search = new URLSearchParams(request.query).toString();
  const url = `${t.apiUrl}${request.path}${search ? `?${search}` : ''}`;
  const headers: Record<string, string> = Object.fromEntries(request.headers);
  if (request.token) headers.authorization = `Bearer ${request.token}`;
  let body: string | undefined;
  if (request.body) {
    headers['content-type'] = 'application/json';
    body = 'json' in request.body ? (JSON.stringify(request.body.json) ?? 'null') : request.body.raw;
  }
  const res = await fetch(url, { method: op.method, headers, ...(body === undefined ? {} : { body }) });
  const where = `${op.method} ${request.path}${search ? `?${search}` : ''} (${request.token === TEST_TOKEN.a ? 'tenant A' : request.token === TEST_TOKEN.b ? 'tenant B' : (request.token ?? 'no token')})`;
  const type = res.headers.get('content-type') ?? '';
  if (type.includes('text/event-stream')) {
    await res.body?.cancel();
    expect(op.responses[String(res.status)], `${where}: ${res.status} is not documented`).toBeDefined();
    return;
  }
  const text = await res.text();
  expect(res.status, `${where}: ${text.slice(0, 300)}`).toBeLessThan(500);
  const documented = op.responses[String(res.status)];
  expect(documented, `${where}: ${res.status} is not documented (${text.slice(0, 200)})`).toBeDefined();
  if (op.path.startsWith(apiPrefix('echo')) && res.status !== 204) expect(type, `${where}: the answer is not JSON, CSV or a stream`).toMatch(/application\/json|text\/csv|text\/event-stream/);
  const schema = documented!.content?.['application/json']?.schema;
  if (schema && res.status !== 204) {
    expect(type, `${where}: documented as JSON`).toContain('application/json');
    const validate = validatorOf(schema);
    const json = JSON.parse(text);
    expect(validate(json), `${where}: the body does not match the document: ${ajv.errorsText(validate.errors)}\n${text.slice(0, 300)}`).toBe(true);
  }
  if (request.token !== TEST_TOKEN.a && res.status < 300) {
    for (const secret of secrets) expect(text.includes(secret), `${where}: shows tenant A's ${secret}`).toBe(false);
  }
}

describe('the OpenAPI document, fuzzed', () => {
  it('every route answers a documented status with a documented body, never a 5xx, never another tenant’s data', async () => {
    expect(operations.length).toBeGreaterThan(25);
    for (const op of operations) {
      await fc.assert(
        fc.asyncProperty(requestOf(op), (request) => send(op, request)),
        { numRuns: op.body || op.parameters.some((p) => p.in === 'query') ? RUNS.withInput : RUNS.plain, seed: SEED, endOnFailure: true },
      );
    }
  });
});
