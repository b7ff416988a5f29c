import { z } from 'zod';
import { openApiPath, type ResponseSpec, type RouteSpec } from './route.ts';
import { errorSchema } from './schemas.ts';

/**
 * Every status a route can answer: its own, and those the shared layer answers for it (400 for
 * a bad parameter or body, 404 for a path naming what does not exist (or is another tenant's),
 * 413 for a body over the limit, 401 and 429 around the token, 403 for operators' routes, 503
 * while the runtime is not running, 500 with a request id).
 */
export function responsesOf(route: RouteSpec): Record<number, ResponseSpec> {
  const implied: Record<number, ResponseSpec> = {};
  if (route.params || route.query || route.body) implied[400] = errorSchema;
  if (route.params) implied[404] = errorSchema;
  // 503: the runtime is not started yet or is stopping (a draining process).
  if (route.auth ?? true) Object.assign(implied, { 401: errorSchema, 429: errorSchema, 503: errorSchema });
  if (route.operator) implied[403] = errorSchema;
  if (route.body) implied[413] = errorSchema;
  implied[500] = errorSchema;
  return { ...implied, ...route.responses };
}

/** OpenAPI 3.0.3: a nullable enum lists null among its values, or null does not validate. */
function nullableEnums(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(nullableEnums);
  if (!node || typeof node !== 'object') return node;
  const out = Object.fromEntries(Object.entries(node).map(([key, value]) => [key, nullableEnums(value)])) as Record<string, unknown>;
  if (out.nullable === true && Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  return out;
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): unknown {
  // Schemas the document cannot express (transforms, custom checks) are described as `{}`.
  return nullableEnums(z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'openapi-3.0' }));
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query') {
  if (!(schema instanceof z.ZodObject)) return [];
  return Object.entries(schema.shape).map(([name, field]) => ({
    name,
    in: where,
    required: where === 'path' || !(field as z.ZodType).safeParse(undefined).success,
    schema: jsonSchema(field as z.ZodType, 'input'),
  }));
}

function response(status: string, spec: ResponseSpec) {
  const description = status.startsWith('2') ? 'success' : 'error';
  if (spec instanceof z.ZodType) return { description, content: { 'application/json': { schema: jsonSchema(spec, 'output') } } };
  // A body of a content type alone: a file (a string of bytes), or JSON of no declared shape.
  const schema = /^application\/([a-z.+-]*\+)?json\b/.test(spec.contentType) ? {} : { type: 'string' };
  return { description: spec.description ?? description, content: { [spec.contentType]: { schema } } };
}

/** An OpenAPI 3 document generated from the same zod schemas the routes validate with. */
export function openApiDocument(options: { title: string; basePath: string; routes: readonly RouteSpec[]; rootRoutes?: readonly RouteSpec[] }) {
  const paths: Record<string, Record<string, unknown>> = {};
  const add = (base: string, route: RouteSpec) => {
    const path = `${base}${openApiPath(route.path)}`;
    paths[path] ??= {};
    paths[path][route.method] = {
      summary: route.summary,
      ...(route.auth === false ? { security: [] } : {}),
      parameters: [
        ...parameters(route.params, 'path'),
        ...parameters(route.query, 'query'),
        ...Object.entries(route.headers ?? {}).map(([name, h]) => ({ name, in: 'header', required: h.required ?? false, description: h.description, schema: { type: 'string' } })),
      ],
      ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(route.body, 'input') } } } } : {}),
      responses: Object.fromEntries(Object.entries(responsesOf(route)).sort(([a], [b]) => Number(a) - Number(b)).map(([status, spec]) => [status, response(status, spec)])),
    };
  };
  for (const route of options.routes) add(options.basePath, route);
  for (const route of options.rootRoutes ?? []) add('', route);
  return {
    openapi: '3.0.3',
    info: { title: options.title, version: '1' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    security: [{ bearer: [] }],
    paths,
  };
}
