import { z } from 'zod';
import { openApiPath, type ResponseSpec, type RouteSpec } from './route.ts';

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): unknown {
  // Schemas the document cannot express (transforms, custom checks) are described as `{}`.
  return z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'openapi-3.0' });
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
  return { description: spec.description ?? description, content: { [spec.contentType]: { schema: { type: 'string' } } } };
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
      responses: Object.fromEntries(Object.entries(route.responses).map(([status, spec]) => [status, response(status, spec)])),
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
