// Engine turns traced live, for the telemetry tests: the engine test world (test/engine/fixture.ts) with an
// in-memory span exporter, and helpers to look at the span tree.
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { EngineOptions } from '../../src/turn/index.js';
import { createTelemetry, spanModelName, type Telemetry, type TelemetryOptions } from '../../src/telemetry/index.js';
import { makeWorld, startTurn, type World } from '../turn/fixture.js';

export interface TracedWorld extends World {
  telemetry: Telemetry;
  memory: InMemorySpanExporter;
  spans(): ReadableSpan[];
}

export async function tracedWorld(
  rawConfig: Record<string, unknown>,
  engineOpts: Partial<EngineOptions> = {},
  telemetryOpts: TelemetryOptions = {},
): Promise<TracedWorld> {
  const memory = new InMemorySpanExporter();
  const telemetry = createTelemetry({
    otlp: false,
    extraExporters: [memory],
    onWarning: () => undefined,
    ...telemetryOpts,
  });
  const world = await makeWorld(rawConfig, { telemetry, ...engineOpts });
  return {
    ...world,
    telemetry,
    memory,
    spans: () => memory.getFinishedSpans(),
    async close() {
      await world.close();
      await telemetry.shutdown();
    },
  };
}

export { startTurn };

/** The name of a span's parent within the set (null for a root or a remote parent). */
export function parentName(spans: readonly ReadableSpan[], s: ReadableSpan): string | null {
  const id = s.parentSpanContext?.spanId;
  const name = id === undefined ? undefined : spans.find((p) => p.spanContext().spanId === id)?.name;
  return name === undefined ? null : spanModelName(name);
}

/** Span names in start order with their parent's name: `name<parent`. */
export function tree(spans: readonly ReadableSpan[]): string[] {
  return [...spans]
    .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1])
    .map((s) => `${spanModelName(s.name)}<${parentName(spans, s) ?? ''}`);
}
