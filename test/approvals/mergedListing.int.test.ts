// Several gateway members on one real nats-server: each member's HTTP listing, events stream and answer route cover
// every member's approvals, and a listing ends once every live member replied instead of waiting out its bound.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listApprovals } from '../../src/app/index.js';
import type { NatsBus } from '../../src/bus/nats/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';
import { approvalWorld, type ApprovalWorld } from './world.js';

let server: NatsServer;
const members: ApprovalWorld[] = [];
let idle: ApprovalWorld | undefined;

beforeAll(async () => {
  server = await startNatsServer();
  for (let i = 0; i < 2; i++) members.push(await approvalWorld({ nats: server.url, timeoutMs: 60_000 }));
}, 120_000);

afterAll(async () => {
  for (const m of [...members.splice(0), ...(idle === undefined ? [] : [idle])]) await m.close().catch(() => undefined);
  await server?.close();
}, 60_000);

const auth = (m: ApprovalWorld) => ({ authorization: `Bearer ${m.gw.approverToken!.token}` });

/** GET /v1/approvals on `m` until it lists `n` approvals (bounded). */
async function listedOn(m: ApprovalWorld, n: number): Promise<any[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const res = await fetch(`${m.gw.url}/v1/approvals`, { headers: auth(m) });
    expect(res.status).toBe(200);
    const approvals = ((await res.json()) as { approvals: any[] }).approvals;
    if (approvals.length >= n) return approvals;
    if (Date.now() > deadline) throw new Error(`expected ${n} approvals on ${m.gw.url}, saw ${approvals.length}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The first server-sent events of `m`'s approvals stream until `n` `requested` ones came (bounded). */
async function streamed(m: ApprovalWorld, n: number, onReady: () => void = () => undefined): Promise<any[]> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 30_000);
  const got: any[] = [];
  try {
    const res = await fetch(`${m.gw.url}/v1/approvals/events`, { headers: auth(m), signal: abort.signal });
    expect(res.status).toBe(200);
    const decoder = new TextDecoder();
    let buf = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true });
      if (buf.includes(': ready\n\n')) onReady();
      for (const block of buf.split('\n\n').slice(0, -1)) {
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (/^event: requested$/m.test(block) && data !== undefined) got.push(JSON.parse(data));
      }
      buf = buf.slice(buf.lastIndexOf('\n\n') + 2);
      if (got.length >= n) break;
    }
  } catch (err) {
    throw new Error(`the events stream of ${m.gw.url} gave ${got.length} of ${n} requested approvals: ${String(err)}`, {
      cause: err,
    });
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  return got;
}

describe('approvals over HTTP across gateway members on one NATS server', () => {
  it('a listing of members that own no session ends once every live member replied, well within its bound', async () => {
    // Nothing pending and no session owned anywhere yet; the bound is 30 s, so waiting it out would show. No member
    // is named anywhere yet, so the listing waits its grace for unnamed members: 2 s here, since on a loaded machine the
    // second member's reply can come more than the default 150 ms after the first.
    const started = Date.now();
    const listed = await listApprovals(members[0]!.gw.bus as NatsBus, { maxWaitMs: 30_000, graceMs: 2_000 });
    const took = Date.now() - started;
    expect(listed.ok).toBe(true);
    if (!listed.ok) return;
    expect(new Set(listed.value.listings.map((l) => l.member)).size).toBe(2);
    expect(listed.value.approvals).toEqual([]);
    expect(took).toBeLessThan(20_000);
  }, 60_000);

  it('GET on either member lists both approvals; POST on member 1 for member 2 runs that call once on member 2', async () => {
    // Member 1's events stream, open before anything is pending: it hears of member 2's approval live.
    let ready!: () => void;
    const isReady = new Promise<void>((r) => (ready = r));
    const live = streamed(members[0]!, 2, ready);
    // Bounded: the stream itself gives up after 30 s (and then fails the test).
    await Promise.race([isReady, live.then(() => undefined)]);
    const chats = members.map((m, i) => m.chat(`s-merged-${i}`));
    for (const m of members) await m.pending(1);
    expect((await live).map((a) => a.sessionId).sort()).toEqual(['s-merged-0', 's-merged-1']);

    for (const m of members) {
      const all = await listedOn(m, 2);
      expect(all).toHaveLength(2);
      expect(all.map((a) => a.sessionId).sort()).toEqual(['s-merged-0', 's-merged-1']);
      expect(new Set(all.map((a) => a.member)).size).toBe(2);
      for (const a of all) expect(a.args).toMatchObject({ service: 'toolsearch-marker', password: '[redacted]' });
      // One approval by id, whichever member holds it.
      const one = await fetch(`${m.gw.url}/v1/approvals/${encodeURIComponent(all[1].approvalId)}`, {
        headers: auth(m),
      });
      expect(one.status).toBe(200);
    }
    // The events stream (and so the page) opens with both too.
    const opened = await streamed(members[0]!, 2);
    expect(opened.map((a) => a.sessionId).sort()).toEqual(['s-merged-0', 's-merged-1']);

    const theirs = (await listedOn(members[0]!, 2)).find((a) => a.sessionId === 's-merged-1')!;
    const res = await fetch(`${members[0]!.gw.url}/v1/approvals/${encodeURIComponent(theirs.approvalId)}`, {
      method: 'POST',
      headers: { ...auth(members[0]!), 'content-type': 'application/json' },
      body: JSON.stringify({ approved: true, reason: 'from member 1', argsDigest: theirs.argsDigest }),
    });
    const body = (await res.json()) as Record<string, unknown>;
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ ok: true, callId: theirs.callId, approved: true, by: 'local', channel: 'http' });
    expect((await chats[1]!).status).toBe(200);
    expect(members.map((m) => m.runs())).toEqual([[], ['toolsearch-marker']]);
    // Recorded on the member that holds it, as the front that took it authenticated it.
    const resolved = (await members[1]!.events('s-merged-1')).filter((e) => e.type === 'approval.resolved');
    expect(resolved.map((e) => e.data)).toEqual([
      expect.objectContaining({ approvalId: theirs.approvalId, approved: true, by: 'local', channel: 'http' }),
    ]);
    // Answered again through member 1: settled, nothing runs a second time.
    const again = await fetch(`${members[0]!.gw.url}/v1/approvals/${encodeURIComponent(theirs.approvalId)}`, {
      method: 'POST',
      headers: { ...auth(members[0]!), 'content-type': 'application/json' },
      body: JSON.stringify({ approved: true }),
    });
    expect([404, 409]).toContain(again.status);
    expect(members[1]!.runs()).toEqual(['toolsearch-marker']);

    // Member 1's own approval, denied on member 2: blocked, never run.
    const mine = (await listedOn(members[1]!, 1)).find((a) => a.sessionId === 's-merged-0')!;
    const no = await fetch(`${members[1]!.gw.url}/v1/approvals/${encodeURIComponent(mine.approvalId)}`, {
      method: 'POST',
      headers: { ...auth(members[1]!), 'content-type': 'application/json' },
      body: JSON.stringify({ approved: false }),
    });
    expect(no.status).toBe(200);
    expect((await chats[0]!).status).toBe(200);
    expect(members.map((m) => m.runs())).toEqual([[], ['toolsearch-marker']]);
  }, 120_000);

  it('a member that takes no session commands (so not in the owners bucket) is listed too', async () => {
    idle = await approvalWorld({ nats: server.url, timeoutMs: 60_000, sessionEvents: false });
    const chat = idle.chat('s-idle');
    await idle.pending(1);
    const all = await listedOn(members[0]!, 1);
    expect(all.map((a) => a.sessionId)).toEqual(['s-idle']);
    const res = await fetch(`${members[0]!.gw.url}/v1/approvals/${encodeURIComponent(all[0].approvalId)}`, {
      method: 'POST',
      headers: { ...auth(members[0]!), 'content-type': 'application/json' },
      body: JSON.stringify({ approved: true }),
    });
    expect(res.status).toBe(200);
    expect((await chat).status).toBe(200);
    expect(idle.runs()).toEqual(['toolsearch-marker']);
  }, 120_000);
});
