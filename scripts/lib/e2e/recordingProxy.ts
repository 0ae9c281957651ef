import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A provider front that takes bodies of any size (up to `maxBodyBytes`), records them and forwards a trimmed copy. */
export interface RecordingProxy {
  /** OpenAI-compatible base URL (`…/v1`); `GET|DELETE /debug/requests` as on the mock. */
  url: string;
  close(): Promise<void>;
}

const readAll = async (req: IncomingMessage, max: number): Promise<Buffer | undefined> => {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > max) return undefined;
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
};

/**
 * For benches with catalogs whose direct requests exceed the mock provider's 4 MiB body cap (10,000 tools):
 * records every chat request body whole (so byte counts are real), and forwards it to the mock with `tools`
 * cut down to those the scripted scenario can pick (the compact tools, and tools whose name ends with the
 * `target=` name), which leaves the mock's answer unchanged.
 */
export async function startRecordingProxy(upstream: string, maxBodyBytes = 256 * 1024 * 1024): Promise<RecordingProxy> {
  const recorded: unknown[] = [];
  const server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0];
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (path === '/debug/requests') {
        if (req.method === 'DELETE') {
          const cleared = recorded.length;
          recorded.length = 0;
          return send(200, { cleared });
        }
        return send(200, recorded);
      }
      if (path !== '/v1/chat/completions') return send(404, { error: { message: `no route ${path}` } });
      const raw = await readAll(req, maxBodyBytes);
      if (raw === undefined) return send(413, { error: { message: `body over ${maxBodyBytes} bytes` } });
      const body = JSON.parse(raw.toString('utf8')) as {
        messages?: Array<{ role?: string; content?: unknown }>;
        tools?: Array<{ function?: { name?: string } }>;
      };
      recorded.push(body);
      const lastUser = [...(body.messages ?? [])].reverse().find((m) => m.role === 'user');
      const target =
        /\btarget=([A-Za-z0-9_.-]+)/
          .exec(typeof lastUser?.content === 'string' ? lastUser.content : '')?.[1]
          ?.split(':')
          .at(-1) ?? '';
      const keep = (name: string) =>
        name.startsWith('tool_search') ||
        name === 'tool_describe' ||
        name === 'tool_call' ||
        (target !== '' && name.endsWith(target));
      const trimmed = Array.isArray(body.tools)
        ? { ...body, tools: body.tools.filter((t) => keep(t.function?.name ?? '')) }
        : body;
      const answer = await fetch(`${upstream.replace(/\/+$/, '')}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(trimmed),
      });
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(await answer.text());
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: err instanceof Error ? err.message : String(err) } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
