export { FanoutTelemetry } from './telemetry.ts';
export type { TelemetryOptions } from './telemetry.ts';
export { ATTR, DURATION_BUCKETS_S, INSTRUMENTATION_SCOPE, METRIC, SPAN } from './names.ts';
export { LabeledCounts } from './counts.ts';
export type { TraceCarrier } from './carrier.ts';
export type { TaskAttention } from './task-gauges.ts';
