import { createHash } from 'node:crypto';
import { canonicalJson } from '../../catalog/index.js';

/**
 * How much of a request's content the front's recorded session events keep: `digest` (default) keeps a SHA-256 of
 * the canonical JSON and its size in bytes, like the `call.*` events do for arguments; `full` (config
 * `log.content: "full"`, an explicit opt-in) keeps messages, arguments and results as they were.
 */
export type ContentMode = 'digest' | 'full';

/** `sha256:<hex>` of a value's canonical JSON and its UTF-8 size. Pure: no I/O. */
export function contentDigest(value: unknown): { digest: string; bytes: number } {
  const json = canonicalJson(value ?? null);
  return {
    digest: `sha256:${createHash('sha256').update(json).digest('hex')}`,
    bytes: Buffer.byteLength(json, 'utf8'),
  };
}

/** The chat messages of `gateway.turn.requested`, as recorded. Pure: no I/O. */
export function recordedMessages(messages: unknown[], mode: ContentMode): Record<string, unknown> {
  if (mode === 'full') return { messages };
  const d = contentDigest(messages);
  return { messageCount: messages.length, messagesDigest: d.digest, messagesBytes: d.bytes };
}

/** The arguments of `gateway.tool.invoked`, as recorded (`args: null` plus digest and size unless `full`). Pure: no I/O. */
export function recordedArgs(args: unknown, mode: ContentMode): Record<string, unknown> {
  if (mode === 'full') return { args };
  const d = contentDigest(args);
  return { args: null, argsDigest: d.digest, argsBytes: d.bytes };
}

/** A client's result (`clientResult` of `gateway.tool.invoked`), as recorded. Pure: no I/O. */
export function recordedClientResult(okFlag: boolean, value: unknown, mode: ContentMode): Record<string, unknown> {
  if (mode === 'full') return { ok: okFlag, value };
  const d = contentDigest(value);
  return { ok: okFlag, valueDigest: d.digest, valueBytes: d.bytes };
}

/** A step result (`result` of `gateway.tool.answered`), as recorded: values and pending arguments by digest. Pure: no I/O. */
export function recordedAnswer(answer: Record<string, unknown>, mode: ContentMode): Record<string, unknown> {
  if (mode === 'full' || answer['ok'] !== true) return answer;
  const { value, args, pendingClientCalls, ...rest } = answer;
  const out: Record<string, unknown> = { ...rest };
  if ('value' in answer) {
    const d = contentDigest(value);
    out['valueDigest'] = d.digest;
    out['valueBytes'] = d.bytes;
  }
  if ('args' in answer) {
    const d = contentDigest(args);
    out['args'] = {};
    out['argsDigest'] = d.digest;
    out['argsBytes'] = d.bytes;
  }
  if (Array.isArray(pendingClientCalls)) {
    out['pendingClientCalls'] = pendingClientCalls.map((p: Record<string, unknown>) => {
      const { args: a, ...keep } = p;
      const d = contentDigest(a);
      return { ...keep, argsDigest: d.digest, argsBytes: d.bytes };
    });
  }
  return out;
}
