export { bearerAuth, ownedTask, parseRequest, taskRoutes, taskView } from './routes.ts';
export type { AuthEnv, Principal, TaskRoutesOptions } from './routes.ts';
export { errorResponse, HttpError, STATUS_OF, validationError } from './errors.ts';
export type { ErrorBody, Issue } from './errors.ts';
export { openApiDocument } from './openapi.ts';
export type { RouteDoc } from './openapi.ts';
export * from './schemas.ts';
