import { SpanStatusCode, trace, type Context, type Span, type SpanKind } from '@opentelemetry/api';
import { Attr, type SpanAttrs } from './attributes.js';
import { parentContext, type ParentLike } from './propagation.js';
import { hrNow } from './clock.js';
import type { Telemetry } from './setup.js';

export interface WithSpanOptions {
  /** Explicit parent (span, span context, context, W3C headers; `null` = new trace). */
  parent?: ParentLike;
  kind?: SpanKind;
}

/** Sets the given attributes, skipping `undefined` ones. */
export function setAttrs(span: Span, attrs: SpanAttrs): void {
  for (const k in attrs) {
    const v = attrs[k as keyof SpanAttrs];
    if (v !== undefined) span.setAttribute(k, v);
  }
}

/**
 * Marks a span failed with a dotted error code: `error.type` (the OpenTelemetry convention) and
 * `toolsearch.error.code` carry it, status ERROR. Only the code is recorded: error messages can quote argument
 * values, which never go into spans.
 */
export function markError(span: Span, code: string): void {
  span.setAttribute(Attr.errorType, code);
  span.setAttribute(Attr.errorCode, code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: code });
}

/** The error code of a thrown value: its string `code`, else its `name`, else `error`. Pure: no I/O. */
export function errorCodeOf(err: unknown): string {
  if (err !== null && typeof err === 'object') {
    const c = (err as { code?: unknown }).code;
    if (typeof c === 'string' && c !== '') return c;
    const n = (err as { name?: unknown }).name;
    if (typeof n === 'string' && n !== '') return n;
  }
  return 'error';
}

/** A `Result` failure (`{ok: false, error: {code}}`) → its code; anything else → undefined. Pure: no I/O. */
function failureCode(value: unknown): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as { ok?: unknown; error?: { code?: unknown } };
  return v.ok === false && typeof v.error?.code === 'string' ? v.error.code : undefined;
}

function begin(
  telemetry: Telemetry,
  name: string,
  attrs: SpanAttrs,
  opts: WithSpanOptions,
): { span: Span; ctx: Context } {
  const span = telemetry.startSpan(name, attrs, opts);
  const ctx = trace.setSpan(opts.parent === undefined ? telemetry.activeContext() : parentContext(opts.parent), span);
  return { span, ctx };
}

/**
 * Runs `fn` inside a span: the span is the parent of spans started in `fn` (through this Telemetry, or
 * explicitly via the `ctx` passed to `fn`), a thrown error or a returned `Result` failure marks it ERROR
 * with `toolsearch.error.code`, and it always ends. Errors are rethrown and values returned unchanged,
 * so tracing on, off or sampled never changes what `fn` does.
 */
export async function withSpan<T>(
  telemetry: Telemetry,
  name: string,
  attrs: SpanAttrs,
  fn: (span: Span, ctx: Context) => Promise<T> | T,
  opts: WithSpanOptions = {},
): Promise<T> {
  const { span, ctx } = begin(telemetry, name, attrs, opts);
  try {
    const value = await telemetry.runInContext(ctx, () => fn(span, ctx));
    const code = failureCode(value);
    if (code !== undefined) markError(span, code);
    return value;
  } catch (err) {
    markError(span, errorCodeOf(err));
    throw err;
  } finally {
    span.end(hrNow());
  }
}

/** `withSpan` for synchronous work (no promise, no microtask hop). */
export function withSpanSync<T>(
  telemetry: Telemetry,
  name: string,
  attrs: SpanAttrs,
  fn: (span: Span, ctx: Context) => T,
  opts: WithSpanOptions = {},
): T {
  const { span, ctx } = begin(telemetry, name, attrs, opts);
  try {
    const value = telemetry.runInContext(ctx, () => fn(span, ctx));
    const code = failureCode(value);
    if (code !== undefined) markError(span, code);
    return value;
  } catch (err) {
    markError(span, errorCodeOf(err));
    throw err;
  } finally {
    span.end(hrNow());
  }
}
