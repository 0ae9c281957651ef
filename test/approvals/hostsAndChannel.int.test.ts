import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { APPROVER_KEY, CLIENT_KEY, approvalWorld, type ApprovalWorld } from './world.js';

let world: ApprovalWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

/** A request with any Host header (fetch cannot set Host; a DNS-rebinding page's browser sends its own name). */
function send(
  port: number,
  path: string,
  opts: { method?: string; headers: Record<string, string>; body?: unknown },
): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: opts.method ?? 'GET', headers: opts.headers },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {
            // The page's HTML.
          }
          resolve({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error(`no answer to ${opts.method ?? 'GET'} ${path} in 10 s`)));
    req.on('error', reject);
    req.end(opts.body === undefined ? undefined : JSON.stringify(opts.body));
  });
}

describe('gateway.allowedHosts: the page on a LAN name, every other Host and foreign Origin refused', () => {
  it('serves and answers under an allowed name; a rebinding Host and a foreign Origin change nothing', async () => {
    world = await approvalWorld({
      keys: true,
      insecureHttp: true,
      extra: { gateway: { host: '0.0.0.0', allowedHosts: ['Toolsearch.LAN'] } },
    });
    const w = world;
    const port = w.gw.port;
    const approver = { authorization: `Bearer ${APPROVER_KEY}`, 'content-type': 'application/json' };
    const lan = `toolsearch.lan:${port}`;

    expect((await send(port, '/ui', { headers: { host: lan } })).status).toBe(200);
    expect((await send(port, '/v1/approvals', { headers: { ...approver, host: lan } })).status).toBe(200);
    // Loopback names still work; a name nobody listed does not, whatever the credential.
    expect((await send(port, '/v1/approvals', { headers: { ...approver, host: `127.0.0.1:${port}` } })).status).toBe(
      200,
    );
    const rebound = await send(port, '/v1/approvals', { headers: { ...approver, host: `evil.example:${port}` } });
    expect(rebound).toMatchObject({ status: 403, body: { error: { code: 'approval.badHost' } } });
    expect(rebound.body.error.message).toContain('toolsearch.lan');
    expect((await send(port, '/ui', { headers: { host: `evil.example:${port}` } })).status).toBe(403);

    const pending = async (): Promise<any[]> => {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const r = await send(port, '/v1/approvals', { headers: { ...approver, host: lan } });
        if (r.body.approvals.length > 0) return r.body.approvals;
        if (Date.now() > deadline) throw new Error('no approval became pending within 15 s');
        await new Promise((res) => setTimeout(res, 50));
      }
    };
    const asked = fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-toolsearch-session': 's-lan',
        authorization: `Bearer ${CLIENT_KEY}`,
      },
      body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: 'Do it. target=deploy_service' }] }),
    });
    const [a] = await pending();
    const path = `/v1/approvals/${encodeURIComponent(a.approvalId)}`;
    // Attacks: a DNS-rebinding page (its own name as Host, same-origin to itself), and another site in a browser
    // aimed at the allowed name.
    const attacks = [
      { ...approver, host: `evil.example:${port}`, origin: `http://evil.example:${port}` },
      { ...approver, host: lan, origin: 'http://evil.example' },
      { ...approver, host: lan, origin: `http://toolsearch.lan:${port + 1}` },
      { ...approver, host: lan, 'sec-fetch-site': 'cross-site' },
    ];
    for (const headers of attacks) {
      const r = await send(port, path, { method: 'POST', headers, body: { approved: true } });
      expect(r.status, JSON.stringify(headers)).toBe(403);
      expect(['approval.badHost', 'approval.crossOrigin']).toContain(r.body.error.code);
    }
    expect(w.runs()).toEqual([]);
    expect((await pending()).map((p) => p.approvalId)).toEqual([a.approvalId]);

    // The page on the LAN name: same origin, so it answers; the call runs once, recorded as from the page.
    const yes = await send(port, path, {
      method: 'POST',
      headers: { ...approver, host: lan, origin: `http://${lan}`, 'sec-fetch-site': 'same-origin' },
      body: { approved: true },
    });
    expect(yes).toMatchObject({ status: 200, body: { ok: true, by: 'alice', channel: 'page' } });
    expect((await asked).status).toBe(200);
    expect(w.runs()).toEqual(['toolsearch-marker']);
  });

  it('refuses a host name that is not one', async () => {
    const { parseConfig } = await import('../../src/config/index.js');
    const bad = parseConfig({ gateway: { allowedHosts: ['http://toolsearch.lan:8787'] } }, undefined, { cwd: '/' });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error.message).toContain('allowedHosts');
  });
});

describe('the channel of an HTTP answer is the gateway’s to say', () => {
  it('a body "channel" is refused and changes nothing; the record says http', async () => {
    world = await approvalWorld({ keys: true });
    const w = world;
    const headers = { authorization: `Bearer ${APPROVER_KEY}`, 'content-type': 'application/json' };
    const asked = w.chat('s-channel', { authorization: `Bearer ${CLIENT_KEY}` });
    const [a] = await w.pending(1, { authorization: `Bearer ${APPROVER_KEY}` });
    const url = `${w.gw.url}/v1/approvals/${encodeURIComponent(a.approvalId)}`;
    for (const channel of ['mcp', 'nats', 'cli', 'page', 'config']) {
      const forged = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ approved: true, channel }) });
      expect(forged.status).toBe(400);
      const body = (await forged.json()) as any;
      expect(body.error.code).toBe('approval.badAnswer');
      expect(body.error.message).toContain('"channel"');
    }
    expect(w.runs()).toEqual([]);
    const yes = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ approved: true }) });
    expect(await yes.json()).toMatchObject({ ok: true, channel: 'http' });
    expect((await asked).status).toBe(200);
    const resolved = (await w.events('s-channel')).filter((e) => e.type === 'approval.resolved');
    expect(resolved.map((e) => (e.data as any).channel)).toEqual(['http']);
    expect(w.runs()).toEqual(['toolsearch-marker']);
  });
});
