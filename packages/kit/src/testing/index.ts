export { appTest, TEST_ENV, TEST_TOKEN, TEST_TOKENS } from './app-test.ts';
export type { AppTest, AppTestOf } from './app-test.ts';
export { FuzzFailure, fuzzOpenApi } from './fuzz.ts';
export type { FuzzOptions } from './fuzz.ts';
