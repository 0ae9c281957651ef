import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { openMemoryBus, type Envelope } from '../../src/bus/index.js';
import { canonicalJson, loadStaticSources } from '../../src/catalog/index.js';
import { parseConfig } from '../../src/config/index.js';
import { caseOnlyDenyWarnings, forbiddenArgKey, redactSecretArgs } from '../../src/policy/index.js';
import { createTelemetry } from '../../src/telemetry/index.js';
import { createEngine, type Turn } from '../../src/turn/index.js';

/*
 * Attacks on a call's arguments through the real engine (policy enforcer, hooks, validation, plugin tools), checked
 * by effect: the plugin writes a witness file when a tool or its hook runs, and the records (event log, bus, spans)
 * are searched for the secrets.
 */

const PLUGIN = `
import { appendFileSync } from 'node:fs';
const dir = process.env.ARGS_WITNESS_DIR;
export default {
  id: 'vault',
  tools: [
    { name: 'login', description: 'Log in to the vault.', parameters: { type: 'object', properties: {
        user: { type: 'string' }, password: { type: 'string', format: 'password' }, token: { type: 'string', writeOnly: true },
        nested: { type: 'object', properties: { pin: { type: 'string', writeOnly: true } } } } },
      execute: (args) => { throw new Error('login failed for ' + args.user + ' with password ' + args.password + ', token ' + args.token + ', pin ' + args.nested?.pin); } },
    { name: 'store', description: 'Store a named value.', parameters: { type: 'object', properties: { name: { type: 'string' } }, additionalProperties: false },
      execute: (args) => { appendFileSync(dir + '/store.jsonl', JSON.stringify(Object.keys(args)) + '\\n'); return { stored: true }; } },
    { name: 'Delete_Repo', description: 'Delete a repository.', parameters: { type: 'object', properties: {} },
      execute: () => { appendFileSync(dir + '/delete.jsonl', 'ran\\n'); return { deleted: true }; } },
  ],
  hooks: { before_tool_call(call) { appendFileSync(dir + '/hook.jsonl', JSON.stringify(call.name) + '\\n'); } },
};
`;

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

async function world(raw: Record<string, unknown> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'ts-args-'));
  process.env['ARGS_WITNESS_DIR'] = dir;
  writeFileSync(join(dir, 'vault.mjs'), PLUGIN);
  const parsed = parseConfig(
    { plugins: ['./vault.mjs'], workspaceDir: '.', ...raw },
    join(dir, 'toolsearch.config.json5'),
  );
  if (!parsed.ok) throw new Error(parsed.error.message);
  const config = parsed.value.config;
  const logPath = join(dir, 'events.jsonl');
  const bus = await openMemoryBus({ logPath });
  const statics = await loadStaticSources({ config, includeConfig: true, cwd: dir });
  if (!statics.ok) throw new Error(statics.error.message);
  const memory = new InMemorySpanExporter();
  const telemetry = createTelemetry({ otlp: false, extraExporters: [memory], onWarning: () => undefined });
  const engine = createEngine({
    config,
    bus,
    staticSources: statics.value,
    includeConfigMcp: false,
    decisionTimeoutMs: 2000,
    telemetry,
  });
  closers.push(async () => {
    await engine.close();
    await bus.close();
    await telemetry.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });
  const start = async (sessionId: string): Promise<Turn> => {
    const t = await engine.startTurn({ sessionId });
    if (!t.ok) throw new Error(t.error.message);
    return t.value;
  };
  const events = async (sessionId: string): Promise<Envelope[]> => {
    const out: Envelope[] = [];
    for await (const e of bus.replay({ sessionId })) out.push(e);
    return out;
  };
  const witness = (name: string): string[] =>
    existsSync(join(dir, name)) ? readFileSync(join(dir, name), 'utf8').trim().split('\n').filter(Boolean) : [];
  return { dir, config, statics: statics.value, engine, bus, logPath, memory, telemetry, start, events, witness };
}

const exposedName = (turn: Turn, name: string): string => {
  const t = turn.exposure.tools.find(
    (d) => JSON.stringify(d).includes(`"${name}`) || JSON.stringify(d).includes(`_${name}"`),
  );
  if (t === undefined) throw new Error(`${name} is not exposed`);
  return (t as { function: { name: string } }).function.name;
};

describe('secret arguments', () => {
  it('a writeOnly or password argument never reaches the event log, the bus, a span or the error message', async () => {
    const w = await world();
    const turn = await w.start('secrets-1');
    const args = { user: 'bob', password: 'hunter2-PW-x9', token: 'tok-SECRET-77', nested: { pin: 'PIN-4242-zz' } };
    const r = await turn.invoke(exposedName(turn, 'login'), args);
    await turn.end();
    expect(r.ok).toBe(false);
    const message = r.ok ? '' : r.error.message;
    expect(message).toContain('login failed for bob with password [redacted], token [redacted], pin [redacted]');
    await w.telemetry.flush();
    const records = [
      readFileSync(w.logPath, 'utf8'),
      JSON.stringify(await w.events('secrets-1')),
      JSON.stringify(
        w.memory
          .getFinishedSpans()
          .map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })),
      ),
    ];
    expect(records[2]).toContain('toolsearch.call');
    for (const text of records) {
      for (const secret of [args.password, args.token, args.nested.pin]) expect(text).not.toContain(secret);
    }
    // The failure itself is recorded (so the search above looked at the message), with the secrets redacted.
    expect(records[0]).toContain('login failed for bob with password [redacted]');
    // The digest is of the redacted arguments: an unsalted digest of a short password would give it away.
    const requested = (await w.events('secrets-1')).find((e) => e.type === 'call.requested');
    const redacted = redactSecretArgs(
      {
        type: 'object',
        properties: {
          password: { format: 'password' },
          token: { writeOnly: true },
          nested: { properties: { pin: { writeOnly: true } } },
        },
      },
      args,
    );
    expect(redacted).toEqual({
      user: 'bob',
      password: '[redacted]',
      token: '[redacted]',
      nested: { pin: '[redacted]' },
    });
    expect((requested?.data as { argsDigest: string }).argsDigest).toBe(
      createHash('sha256').update(canonicalJson(redacted)).digest('hex'),
    );
    expect(args.password).toBe('hunter2-PW-x9'); // the caller's object is left alone
  });
});

describe('prototype keys in arguments', () => {
  it('an own __proto__, constructor or prototype key is refused before hooks and validation, and nothing runs', async () => {
    const w = await world();
    const turn = await w.start('proto-1');
    const store = exposedName(turn, 'store');
    for (const raw of [
      '{"name":"x","__proto__":{"admin":true}}',
      '{"name":{"constructor":{"prototype":1}}}',
      '{"list":[{"prototype":1}]}',
    ]) {
      const r = await turn.invoke(store, JSON.parse(raw));
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.error.code).toBe('call.forbiddenKey');
        expect(r.error.message).toMatch(/^args\.\S*(__proto__|constructor|prototype) is refused/);
      }
    }
    expect(w.witness('store.jsonl')).toEqual([]);
    expect(w.witness('hook.jsonl')).toEqual([]);
    // A clean call goes through, hook and tool included: the witnesses work.
    expect(await turn.invoke(store, { name: 'x' })).toMatchObject({ ok: true });
    expect(w.witness('store.jsonl')).toEqual(['["name"]']);
    expect(w.witness('hook.jsonl')).toEqual(['"store"']);
    await turn.end();
    const rejected = (await w.events('proto-1')).filter((e) => e.type === 'call.rejected');
    expect(rejected.map((e) => (e.data as { code: string }).code)).toEqual([
      'call.forbiddenKey',
      'call.forbiddenKey',
      'call.forbiddenKey',
    ]);
  });

  it('is refused the same through tool_call in tools mode', async () => {
    const w = await world({ tools: { toolSearch: { mode: 'tools' } } });
    const turn = await w.start('proto-2');
    const r = await turn.invoke(
      'tool_call',
      JSON.parse('{"id":"openclaw:vault:store","args":{"name":"x","__proto__":{"polluted":true}}}'),
    );
    expect(r).toMatchObject({ ok: false, error: { code: 'call.forbiddenKey' } });
    await turn.end();
    expect(w.witness('store.jsonl')).toEqual([]);
    expect(w.witness('hook.jsonl')).toEqual([]);
  });

  it('finds the key at any depth and in arrays (pure)', () => {
    expect(forbiddenArgKey({ a: [{ b: 1 }, { c: JSON.parse('{"__proto__": 1}') }] })).toBe('args.a[1].c.__proto__');
    expect(forbiddenArgKey({ a: { b: 'constructor' } })).toBeUndefined();
  });
});

describe('deny patterns and case', () => {
  it('warns when a deny pattern matches a tool only ignoring case, and tools.matchCase: false makes it deny', async () => {
    const sensitive = await world({ tools: { deny: ['*delete_repo'] } });
    const warnings = caseOnlyDenyWarnings(
      sensitive.statics.parts.flatMap((p) => p.entries),
      sensitive.config,
    );
    expect(warnings).toEqual([
      'deny pattern "*delete_repo" (tools.deny) matches openclaw:vault:Delete_Repo only when case is ignored, so it does not deny it: fix the pattern\'s case or set tools.matchCase: false.',
    ]);
    const t1 = await sensitive.start('case-1');
    expect(await t1.invoke(exposedName(t1, 'Delete_Repo'), {})).toMatchObject({ ok: true });
    await t1.end();
    expect(sensitive.witness('delete.jsonl')).toEqual(['ran']);

    const insensitive = await world({ tools: { deny: ['*delete_repo'], matchCase: false } });
    expect(
      caseOnlyDenyWarnings(
        insensitive.statics.parts.flatMap((p) => p.entries),
        insensitive.config,
      ),
    ).toEqual([]);
    const t2 = await insensitive.start('case-2');
    expect(JSON.stringify(t2.exposure.tools)).not.toMatch(/delete_repo/i);
    const r = await t2.invoke('Delete_Repo', {});
    expect(r.ok).toBe(false);
    await t2.end();
    expect(insensitive.witness('delete.jsonl')).toEqual([]);
  });
});
