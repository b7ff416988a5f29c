import { z } from 'zod';

export interface RouteDoc {
  method: 'get' | 'post';
  /** OpenAPI path template, e.g. `/tasks/{id}`. */
  path: string;
  summary: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  responses: Record<number, z.ZodType>;
  /** @default true */
  auth?: boolean;
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): unknown {
  // Schemas the document cannot express (transforms, custom checks) are described as `{}`.
  return z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'openapi-3.0' });
}

function parameters(schema: z.ZodObject | undefined, where: 'path' | 'query') {
  if (!schema) return [];
  return Object.entries(schema.shape).map(([name, field]) => ({
    name,
    in: where,
    required: where === 'path' || !(field as z.ZodType).safeParse(undefined).success,
    schema: jsonSchema(field as z.ZodType, 'input'),
  }));
}

/** An OpenAPI 3 document generated from the same zod schemas the routes validate with. */
export function openApiDocument(options: { title: string; basePath: string; routes: readonly RouteDoc[] }) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of options.routes) {
    const path = `${options.basePath}${route.path}`;
    paths[path] ??= {};
    paths[path][route.method] = {
      summary: route.summary,
      ...(route.auth === false ? { security: [] } : {}),
      parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
      ...(route.body ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(route.body, 'input') } } } } : {}),
      responses: Object.fromEntries(
        Object.entries(route.responses).map(([status, schema]) => [
          status,
          {
            description: status.startsWith('2') ? 'success' : 'error',
            content: route.path.endsWith('/events') && status === '200' ? { 'text/event-stream': { schema: { type: 'string' } } } : { 'application/json': { schema: jsonSchema(schema, 'output') } },
          },
        ]),
      ),
    };
  }
  return {
    openapi: '3.0.3',
    info: { title: options.title, version: '1' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    security: [{ bearer: [] }],
    paths,
  };
}
