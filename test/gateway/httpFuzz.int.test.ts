import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Envelope } from '../../src/bus/index.js';
import { parseConfig } from '../../src/config/index.js';
import { ChatRequestFields, MessageSchemas } from '../../src/gateway/front/chatRequest.js';
import { startGateway, type RunningGateway } from '../../src/app/index.js';
import { noLagAdmission } from '../support/gateway.js';

/*
 * Fuzzes the OpenAI-compatible front of a real gateway (embedded bus with its JSONL log, built-in mock provider)
 * over every field it knows, every message role and random mutations of valid requests: no answer is a 5xx,
 * every refusal has OpenAI's error shape, and the log holds exactly one `gateway.turn.ended` per
 * `gateway.turn.requested` (refused requests publish nothing).
 */

/** A small deterministic PRNG (mulberry32) so a failure replays. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const nested = (depth: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 === 0 ? [v] : { k: v };
  return v;
};

/** Values of every JSON kind, edge cases included. */
const WEIRD: unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1,
  2,
  1.5,
  1e308,
  -1e308,
  '',
  'x',
  'x'.repeat(5000),
  '\u0000\u202e',
  [],
  [null],
  [1, 'a'],
  {},
  { type: 'function' },
  { a: { b: { c: 1 } } },
  nested(40),
  nested(200),
  'none',
  'auto',
  ['a', 'b', 'c', 'd', 'e'],
  [{ type: 'text', text: 'hi' }],
  [{ type: 'text' }],
  { __proto__: { polluted: true } },
  { constructor: { prototype: {} } },
];

const user = { role: 'user', content: 'hello' };

type Answer = { status: number; body: any; text: string };

describe('the HTTP front under fuzzed requests', () => {
  let dir: string;
  let gw: RunningGateway;
  const answers: Answer[] = [];

  const post = async (body: string | unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const a = { status: res.status, body: parsed, text };
    answers.push(a);
    return a;
  };

  const expectSound = (a: Answer, what: string) => {
    expect(a.status, `${what}: ${a.text.slice(0, 300)}`).toBeLessThan(500);
    if (a.status >= 400) {
      expect(a.body?.error, what).toMatchObject({
        message: expect.any(String),
        type: expect.any(String),
        code: expect.any(String),
      });
      expect(a.body.error.message.length, what).toBeGreaterThan(10);
      expect(a.body.error.param === null || typeof a.body.error.param === 'string', what).toBe(true);
    }
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolsearch-fuzz-'));
    const loaded = parseConfig({ tools: { toolSearch: { mode: 'tools' } }, gateway: noLagAdmission }, undefined, {
      cwd: dir,
    });
    if (!loaded.ok) throw new Error(loaded.error.message);
    const started = await startGateway({ config: loaded.value.config, cwd: dir, port: 0, logPath: 'events.jsonl' });
    if (!started.ok) throw new Error(started.error.message);
    gw = started.value;
  });
  afterAll(async () => {
    await gw?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses every known field with a wrong value with 400 naming the field, and never fails inside', async () => {
    for (const field of Object.keys(ChatRequestFields)) {
      for (const value of WEIRD) {
        const a = await post({ messages: [user], [field]: value });
        expectSound(a, `${field}=${JSON.stringify(value)?.slice(0, 80)}`);
        if (a.status === 400 && a.body.error.code !== 'nesting_too_deep')
          expect(a.body.error.param ?? '').toMatch(new RegExp(`^${field}`));
      }
    }
    // n is 1 or nothing: any other value is refused before a turn runs.
    for (const n of [0, 2, '1', 1.0001])
      expect((await post({ messages: [user], n })).body.error).toMatchObject({ code: 'unsupported_value', param: 'n' });
  }, 120_000);

  it('refuses wrong message fields by role, unknown roles and malformed tool calls with 400', async () => {
    for (const role of [...Object.keys(MessageSchemas), 'wizard', 'function', '', 'USER']) {
      for (const key of ['content', 'tool_calls', 'tool_call_id', 'name', 'refusal', 'role']) {
        for (const value of WEIRD) {
          const message: Record<string, unknown> = {
            role,
            content: 'x',
            ...(role === 'tool' ? { tool_call_id: 'c1' } : {}),
            [key]: value,
          };
          const a = await post({ messages: [user, message] });
          expectSound(a, `${role}.${key}=${JSON.stringify(value)?.slice(0, 80)}`);
        }
      }
    }
    const x = await post({ messages: [user, { role: 'assistant', tool_calls: 'x' }] });
    expect(x.status).toBe(400);
    expect(x.body.error.param).toBe('messages[1].tool_calls');
    const role = await post({ messages: [{ role: 'wizard', content: 'x' }] });
    expect(role.body.error).toMatchObject({ code: 'unknown_role', param: 'messages[0].role' });
  }, 120_000); // hundreds of requests in series: slow on a loaded 2-core machine

  it('refuses bodies nested deeper than the limit, even inside fields it passes through', async () => {
    for (const depth of [65, 1000, 100_000]) {
      const deep = '['.repeat(depth) + ']'.repeat(depth);
      const a = await post(`{"messages":[{"role":"user","content":"x"}],"extra":${deep}}`);
      expectSound(a, `depth ${depth}`);
      expect(a.body.error.code).toBe('nesting_too_deep');
      const inMessage = await post(`{"messages":[{"role":"user","content":${deep}}]}`);
      expect(inMessage.body.error.code).toBe('nesting_too_deep');
    }
  });

  it('survives random mutations of valid requests', async () => {
    const random = rng(20261201);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const base = () => ({
      model: 'm',
      temperature: 0.5,
      messages: [
        { role: 'system', content: 's' },
        user,
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'done' },
        { role: 'user', content: 'target=current_time' },
      ],
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    });
    const mutate = (v: any, depth: number): any => {
      if (depth > 4 || v === null || typeof v !== 'object') return pick(WEIRD);
      const keys = Object.keys(v);
      const k = keys.length === 0 ? 'k' : pick(keys);
      const out = Array.isArray(v) ? [...v] : { ...v };
      const r = random();
      if (r < 0.15) delete out[k];
      else if (r < 0.3)
        out[pick(['role', 'content', 'tool_calls', 'type', 'function', 'arguments', 'zz'])] = pick(WEIRD);
      else if (r < 0.6) out[k] = pick(WEIRD);
      else out[k] = mutate(v[k], depth + 1);
      return out;
    };
    for (let i = 0; i < 150; i++) {
      const body = mutate(base(), 0);
      const a = await post(body, random() < 0.3 ? { 'x-toolsearch-session': `fuzz-${i % 5}` } : {});
      expectSound(a, `mutation ${i}: ${JSON.stringify(body).slice(0, 300)}`);
    }
    // The unmutated request runs a real turn.
    expect((await post(base())).status).toBe(200);
  });

  it('leaves a complete log: one turn.ended per turn.requested, nothing for refused requests', async () => {
    await gw.close();
    const logged = (await readFile(join(dir, 'events.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Envelope);
    const requested = logged.filter((e) => e.type === 'gateway.turn.requested');
    const ended = logged.filter((e) => e.type === 'gateway.turn.ended');
    expect(requested.length).toBeGreaterThan(0);
    expect(new Set(ended.map((e) => e.turnId))).toEqual(new Set(requested.map((e) => e.turnId)));
    expect(ended).toHaveLength(requested.length);
    // Refused requests (400) ran no turn: the turns are exactly the answers that were not refused before a turn.
    const refusedUpFront = answers.filter(
      (a) => a.status === 400 && !String(a.body?.error?.code ?? '').includes('.'),
    ).length;
    expect(requested.length).toBe(answers.length - refusedUpFront);
    for (const e of logged.filter((x) => x.type === 'turn.started')) {
      expect(
        logged.some((x) => x.turnId === e.turnId && (x.type === 'turn.completed' || x.type === 'turn.failed')),
      ).toBe(true);
    }
  });
});
