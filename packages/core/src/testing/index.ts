export { runStoreConformance } from './conformance.ts';
export type { ConformanceHarness } from './conformance.ts';
