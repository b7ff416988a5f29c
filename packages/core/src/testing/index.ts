export { runStoreConformance } from './conformance.ts';
export type { ConformanceHarness, HeldRow } from './conformance.ts';
