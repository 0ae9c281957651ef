import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/bus/index.js';
import { turnStateFrom } from '../../src/events/index.js';

/*
 * Durable turns on the embedded bus, with real gateway processes (`toolsearch serve`) on one event log:
 * - SIGKILL mid-turn with a call started (a counting plugin tool that hangs), an approval pending and a client call
 *   pending; a restart on the same log leaves nothing open: the started call ends `call.outcomeUnknown` (never run
 *   again: the witness file counts one run), the approval `cancelled`, every turn has a terminal fact, and the
 *   client call still takes its result;
 * - SIGTERM during an approval wait: the cut request is answered 503 with Retry-After and the wait is recorded
 *   `cancelled`, not `timeout`.
 */

const BIN = resolve('bin/toolsearch.mjs');

const PLUGIN = (witness: string) => `
import { appendFileSync } from 'node:fs';
const count = (name) => appendFileSync(${JSON.stringify(witness)}, name + '\\n');
export default {
  id: 'bank',
  tools: [
    { name: 'charge_card', description: 'Charge the card.', parameters: { type: 'object', properties: {} },
      execute: async () => { count('charge_card'); await new Promise((r) => setTimeout(r, 600000)); return { charged: true }; } },
    { name: 'count_me', description: 'Count one visit.', parameters: { type: 'object', properties: {} },
      execute: async () => { count('count_me'); return { counted: true }; } },
    { name: 'deploy_service', description: 'Deploy a service to production.', parameters: { type: 'object', properties: {} },
      execute: async () => { count('deploy_service'); return { deployed: true }; } },
  ],
};
`;

let dir = '';
let logPath = '';
let witness = '';
const children: ChildProcess[] = [];

async function startServe(): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(
    process.execPath,
    [BIN, 'serve', '--port', '0', '--config', join(dir, 'toolsearch.config.json'), '--log', logPath],
    { cwd: dir, env: { ...process.env, NATS_URL: '', OPENAI_API_KEY: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const url = await new Promise<string>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`the gateway did not start: ${out}`)), 60_000);
    const look = () => {
      const m = /listening on (http:\/\/[^\s)]+)/.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        res(m[1]!);
      }
    };
    child.stdout!.on('data', look);
    child.on('exit', () => rej(new Error(`the gateway exited: ${out}`)));
  });
  return { child, url, output: () => out };
}

async function readLog(): Promise<Envelope[]> {
  if (!existsSync(logPath)) return [];
  return (await readFile(logPath, 'utf8'))
    .split('\n')
    .filter((l) => l.trim() !== '')
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Envelope];
      } catch {
        return [];
      }
    });
}

async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got !== undefined) return got;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const logged = (pred: (e: Envelope) => boolean) => async () => (await readLog()).find(pred);

function chat(url: string, session: string, body: Record<string, unknown>, key?: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-toolsearch-session': session,
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    body: JSON.stringify({ model: 'any', ...body }),
  });
}

const exited = (child: ChildProcess) =>
  new Promise<void>((r) =>
    child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r()),
  );

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ts-durable-'));
  logPath = join(dir, 'events.jsonl');
  witness = join(dir, 'witness.txt');
  await writeFile(join(dir, 'bank.mjs'), PLUGIN(witness));
  await writeFile(
    join(dir, 'toolsearch.config.json'),
    JSON.stringify({
      tools: { approval: { require: ['deploy_service'], timeoutMs: 60_000 } },
      plugins: [join(dir, 'bank.mjs')],
      workspaceDir: dir,
    }),
  );
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await Promise.all(children.map(exited));
  await rm(dir, { recursive: true, force: true });
});

const runs = async (name: string) =>
  existsSync(witness) ? (await readFile(witness, 'utf8')).split('\n').filter((l) => l === name).length : 0;

describe('durable turns on the embedded bus (real processes)', () => {
  it('SIGKILL mid-turn, restart on the same log: nothing left open, no call ran twice', async () => {
    const gw1 = await startServe();
    // A call started: the tool has begun (witness written) and hangs.
    const payBody = { messages: [{ role: 'user', content: 'pay target=charge_card' }] };
    const cut1 = chat(gw1.url, 'k-charge', payBody, 'pay-1').catch(() => undefined);
    await until(
      'call.started of charge_card',
      logged((e) => e.type === 'call.started'),
    );
    await until('the tool ran', async () => ((await runs('charge_card')) === 1 ? true : undefined));
    // An approval pending.
    const cut2 = chat(gw1.url, 'k-deploy', {
      messages: [{ role: 'user', content: 'ship target=deploy_service' }],
    }).catch(() => undefined);
    await until(
      'approval.requested',
      logged((e) => e.type === 'approval.requested'),
    );
    // A client call pending: handed back to the client, whose result comes later.
    const client = await chat(gw1.url, 'k-client', {
      messages: [{ role: 'user', content: 'map target=show_map' }],
      tools: [
        {
          type: 'function',
          function: { name: 'show_map', description: 'Show a map.', parameters: { type: 'object', properties: {} } },
        },
      ],
    });
    expect(client.status).toBe(200);
    const handed = (await client.json()) as { choices: Array<{ message: { tool_calls?: Array<{ id: string }> } }> };
    const toolCallId = handed.choices[0]?.message.tool_calls?.[0]?.id;
    expect(typeof toolCallId).toBe('string');
    // The client call's record is durable with the turn's end (a sync point).
    await until(
      'call.pending',
      logged((e) => e.type === 'call.pending'),
    );

    gw1.child.kill('SIGKILL');
    await exited(gw1.child);
    await Promise.all([cut1, cut2]);

    const gw2 = await startServe();
    const events = await readLog();
    const turns = new Map<string, string>();
    for (const e of events)
      if (e.turnId !== '' && !e.type.startsWith('gateway.')) turns.set(`${e.sessionId}\0${e.turnId}`, e.sessionId);
    expect(turns.size).toBeGreaterThanOrEqual(3);
    for (const [key, sessionId] of turns) {
      const state = turnStateFrom(events, sessionId, key.split('\0')[1]!);
      expect({ key, status: state.status }).not.toMatchObject({ status: 'running' });
      expect(state.pendingCalls).toEqual({});
      expect(state.pendingApprovals).toEqual({});
    }
    const unknown = events.find((e) => e.type === 'call.outcomeUnknown');
    expect(unknown?.data).toMatchObject({ toolId: 'openclaw:bank:charge_card' });
    expect((unknown?.data as { reason: string }).reason).toMatch(/may or may not have happened/);
    expect(events.find((e) => e.type === 'approval.settled')?.data).toMatchObject({
      by: 'cancelled',
      cancelled: true,
    });
    expect(
      events
        .filter((e) => e.type === 'turn.interrupted')
        .map((e) => e.sessionId)
        .sort(),
    ).toEqual(['k-charge', 'k-deploy']);
    expect(gw2.output()).toMatch(/recovered 2 turn\(s\)/);

    // The client call handed back before the crash still takes its result, under the gateway's call id.
    const pending = events.find((e) => e.type === 'call.pending');
    const answered = await chat(gw2.url, 'k-client', {
      messages: [
        { role: 'user', content: 'map target=show_map' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: toolCallId, type: 'function', function: { name: 'show_map', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: toolCallId, content: 'the map is shown' },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'show_map', description: 'Show a map.', parameters: { type: 'object', properties: {} } },
        },
      ],
    });
    expect(answered.status).toBe(200);
    const received = await until(
      'client.result.received',
      logged((e) => e.type === 'client.result.received'),
    );
    expect((received.data as { callId: string }).callId).toBe((pending?.data as { callId: string }).callId);

    // The client retries the cut request with its Idempotency-Key: answered from the record, not run again.
    const retried = await chat(gw2.url, 'k-charge', payBody, 'pay-1');
    expect(retried.status).toBe(409);
    const refusal = (await retried.json()) as { error: { code: string; message: string } };
    expect(refusal.error.code).toBe('request.alreadyHandled');
    expect(refusal.error.message).toMatch(/charge_card/);
    expect(refusal.error.message).toMatch(/may or may not have happened/);

    // Nothing ran twice, and the approval that was never given ran nothing.
    expect(await runs('charge_card')).toBe(1);
    expect(await runs('deploy_service')).toBe(0);
    gw2.child.kill('SIGKILL');
    await exited(gw2.child);
  });
  it('SIGTERM during an approval wait: 503 with Retry-After, the wait recorded cancelled, the turn interrupted', async () => {
    const gw = await startServe();
    const answer = chat(gw.url, 'k-term', { messages: [{ role: 'user', content: 'ship target=deploy_service' }] });
    await until(
      'approval.requested of k-term',
      logged((e) => e.type === 'approval.requested' && e.sessionId === 'k-term'),
    );
    const t0 = Date.now();
    gw.child.kill('SIGTERM');
    const res = await answer;
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('gateway.shuttingDown');
    await exited(gw.child);
    expect(gw.child.exitCode).toBe(0);
    const events = (await readLog()).filter((e) => e.sessionId === 'k-term');
    const resolved = events.find((e) => e.type === 'approval.settled');
    expect(resolved?.data).toMatchObject({ approved: false, by: 'cancelled', cancelled: true });
    expect((resolved?.data as { timedOut?: boolean }).timedOut).toBeUndefined();
    const turnId = events.find((e) => e.type === 'turn.started')!.turnId;
    const state = turnStateFrom(events, 'k-term', turnId);
    expect(state).toMatchObject({ status: 'interrupted', pendingCalls: {}, pendingApprovals: {} });
    expect(await runs('deploy_service')).toBe(0);
    // Well inside the 60 s approval timeout: the shutdown did not wait for it.
    expect(Date.now() - t0).toBeLessThan(30_000);
  });
  it('a retry with the same Idempotency-Key gets the same answer and runs nothing again', async () => {
    const gw = await startServe();
    const body = { messages: [{ role: 'user', content: 'count target=count_me' }] };
    const first = await chat(gw.url, 'k-idem', body, 'visit-1');
    expect(first.status).toBe(200);
    const firstText = await first.text();
    const second = await chat(gw.url, 'k-idem', body, 'visit-1');
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await second.text()).toBe(firstText);
    expect(await runs('count_me')).toBe(1);
    // The same key with another body is refused; a new key runs a new turn.
    const other = await chat(
      gw.url,
      'k-idem',
      { messages: [{ role: 'user', content: 'other target=count_me' }] },
      'visit-1',
    );
    expect(other.status).toBe(422);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe('request.idempotencyKeyReused');
    expect((await chat(gw.url, 'k-idem', body, 'visit-2')).status).toBe(200);
    expect(await runs('count_me')).toBe(2);
    // After a restart the answer is not kept, but the record is: the retry is refused, not run.
    gw.child.kill('SIGKILL');
    await exited(gw.child);
    const gw2 = await startServe();
    const after = await chat(gw2.url, 'k-idem', body, 'visit-1');
    expect(after.status).toBe(409);
    expect(await runs('count_me')).toBe(2);
    gw2.child.kill('SIGKILL');
    await exited(gw2.child);
  });
});
