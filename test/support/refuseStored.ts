import type { NatsConnection } from '@nats-io/transport-node';

/**
 * A fault for one connection: every publish whose subject `matches` carries `Nats-Expected-Stream` naming a stream
 * that does not exist, so JetStream refuses to store it (a real refusal by the server) while core subscribers (an
 * enforcer on the same bus) still receive it: the message is delivered and acted on, but never recorded. Returns a
 * function that lifts the fault.
 */
export function refuseStoring(nc: NatsConnection, matches: (subject: string) => boolean): () => void {
  const original = nc.publish.bind(nc);
  const faulty: NatsConnection['publish'] = (subject, data, opts) => {
    if (!matches(subject) || opts?.headers === undefined) return original(subject, data, opts);
    // The client asks a publish's headers only for their bytes (`encode`), however they were built.
    const headers = opts.headers as unknown as { encode(): Uint8Array };
    const block = new TextDecoder().decode(headers.encode());
    // The header block ends with an empty line: the extra header goes before it.
    const bytes = new TextEncoder().encode(`${block.slice(0, -2)}Nats-Expected-Stream: NOT_A_STREAM\r\n\r\n`);
    return original(subject, data, { ...opts, headers: { encode: () => bytes } as unknown as typeof opts.headers });
  };
  nc.publish = faulty;
  return () => {
    nc.publish = original;
  };
}
