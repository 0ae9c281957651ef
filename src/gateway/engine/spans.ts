import type { Span } from '@opentelemetry/api';
import { withSpan, type SpanAttrs, type Telemetry } from '../../telemetry/index.js';

/**
 * Runs `fn` in a span named `name` under `parent` when telemetry is on; without telemetry it just runs `fn`.
 * Kept light: the engine records ids, counts and codes only (never argument values).
 */
export function traced<T>(
  telemetry: Telemetry | undefined,
  name: string,
  attrs: SpanAttrs,
  parent: Span | undefined,
  fn: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (telemetry === undefined) return fn(undefined);
  return withSpan(telemetry, name, attrs, (span) => fn(span), parent === undefined ? {} : { parent });
}
