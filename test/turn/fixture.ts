// A small world for engine tests: a plugin module written to a temp dir (a few tools and a before_tool_call hook),
// a config with deny, owner-only and approval rules, the memory bus with a temp JSONL log.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openMemoryBus, readEventLog, type Envelope, type MemoryBus } from '../../src/bus/index.js';
import { parseConfig, type ResolvedConfig } from '../../src/config/index.js';
import { expect } from 'vitest';
import { orderSessionEvents } from '../../src/audit/index.js';
import { evolveSession, initialSessionState, turnStateFrom, validateEvent } from '../../src/events/index.js';
import { createEngine, type Engine, type EngineOptions, type ObservedTurn } from '../../src/turn/index.js';
import { loadStaticSources, type StaticSources } from '../../src/catalog/index.js';
import type { Turn } from '../../src/turn/index.js';

export const PLUGIN_SOURCE = `
export default {
  id: 'demo',
  tools: [
    { name: 'echo_text', description: 'Echo the given text back, unchanged.', parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'], additionalProperties: false },
      execute: (args, ctx) => ({ echoed: args.text, session: ctx.sessionId, agent: ctx.agentId, callId: ctx.callId }) },
    { name: 'add_numbers', description: 'Add two numbers and return the sum.', parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
      execute: (args) => ({ sum: args.a + args.b }) },
    { name: 'secret_vault', description: 'Read a secret from the vault.', parameters: { type: 'object', properties: {} },
      execute: () => ({ secret: 'hunter2' }) },
    { name: 'admin_reset', description: 'Reset the administrator settings.', ownerOnly: true, parameters: { type: 'object', properties: {} },
      execute: () => ({ reset: true }) },
    { name: 'deploy_service', description: 'Deploy a service to production.', parameters: { type: 'object', properties: { service: { type: 'string' } }, required: ['service'] },
      execute: (args) => ({ deployed: args.service }) },
    { name: 'fail_always', description: 'A tool that always throws an error.', parameters: { type: 'object', properties: {} },
      execute: () => { throw new Error('kaput'); } },
  ],
  hooks: {
    before_tool_call(call, ctx) {
      if (call.args.text === 'forbidden') return { block: 'text "forbidden" is not allowed' };
      if (call.args.text === 'rewrite-me') return { args: { ...call.args, text: 'rewritten' } };
      if (call.args.text === 'boom') throw new Error('hook exploded');
      return undefined;
    },
  },
};
`;

export interface World {
  dir: string;
  config: ResolvedConfig;
  bus: MemoryBus;
  sources: StaticSources;
  engine: Engine;
  logPath: string;
  /** Every turn the engine ended, with its live state; `close()` checks each against a replay of the bus. */
  observed: ObservedTurn[];
  events(sessionId?: string): Promise<Envelope[]>;
  close(): Promise<void>;
}

export async function makeWorld(
  rawConfig: Record<string, unknown> = {},
  engineOpts: Partial<EngineOptions> = {},
  busOpts: { log?: boolean } = {},
): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), 'ts-engine-'));
  const plugin = join(dir, 'demo.mjs');
  writeFileSync(plugin, PLUGIN_SOURCE);
  const raw = {
    tools: {
      deny: ['secret_*'],
      approval: { require: ['deploy_service'], timeoutMs: 300 },
      ...((rawConfig['tools'] as object) ?? {}),
    },
    ...Object.fromEntries(Object.entries(rawConfig).filter(([k]) => k !== 'tools')),
    plugins: [plugin],
    workspaceDir: dir,
  };
  const parsed = parseConfig(raw, undefined, { cwd: dir });
  if (!parsed.ok) throw new Error(parsed.error.message);
  const config = parsed.value.config;
  const logPath = join(dir, 'events.jsonl');
  const bus = await openMemoryBus({ logPath: busOpts.log === false ? false : logPath });
  const loaded = await loadStaticSources({ config, includeConfig: true, cwd: dir });
  if (!loaded.ok) throw new Error(loaded.error.message);
  const observed: ObservedTurn[] = [];
  const engine = createEngine({
    config,
    bus,
    staticSources: loaded.value,
    includeConfigMcp: true,
    decisionTimeoutMs: 1000,
    ...engineOpts,
    onTurnEnded: (t) => {
      observed.push(t);
      engineOpts.onTurnEnded?.(t);
    },
  });
  const events = async (sessionId?: string) => {
    const out: Envelope[] = [];
    if (sessionId === undefined) return out;
    for await (const e of bus.replay({ sessionId })) out.push(e);
    return out;
  };
  return {
    dir,
    config,
    bus,
    sources: loaded.value,
    engine,
    logPath,
    observed,
    events,
    async close() {
      await engine.close();
      try {
        await expectReplayedStates(observed, events);
      } finally {
        await bus.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * The fold check: every turn's live state (and its session's) is exactly what a replay of the bus folds to.
 * Run by every world's `close()`, so every turn of the engine tests is checked.
 */
export async function expectReplayedStates(
  observed: readonly ObservedTurn[],
  events: (sessionId: string) => Promise<Envelope[]>,
): Promise<void> {
  const bySession = new Map<string, Envelope[]>();
  const lastOf = new Map<string, ObservedTurn>();
  for (const t of observed) {
    let log = bySession.get(t.sessionId);
    if (log === undefined) {
      log = await events(t.sessionId);
      bySession.set(t.sessionId, log);
    }
    expect(turnStateFrom(log, t.sessionId, t.turnId), `turn ${t.sessionId}/${t.turnId}: replayed state`).toEqual(
      t.state,
    );
    lastOf.set(t.sessionId, t);
  }
  for (const [sessionId, t] of lastOf) {
    const replayed = orderSessionEvents(bySession.get(sessionId) ?? [], sessionId).reduce(
      evolveSession,
      initialSessionState(sessionId),
    );
    expect(replayed, `session ${sessionId}: replayed state`).toEqual(t.session);
  }
}

/** Every event valid against its schema, seqs unique per turn. */
export function checkEvents(events: Envelope[]): string[] {
  const problems: string[] = [];
  const seqs = new Set<string>();
  for (const e of events) {
    const v = validateEvent(e);
    if (!v.ok) problems.push(`${e.type}: ${v.error.message}`);
    const key = `${e.turnId}:${e.seq}`;
    if (seqs.has(key)) problems.push(`seq ${key} used twice (${e.type})`);
    seqs.add(key);
  }
  return problems;
}

/** Starts a turn on the world's engine; a refusal is a test failure (thrown with its code and message). */
export async function startTurn(w: World, req: Parameters<World['engine']['startTurn']>[0]): Promise<Turn> {
  const r = await w.engine.startTurn(req);
  if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
  return r.value;
}

export const types = (events: Envelope[]) => events.map((e) => e.type);
export { readEventLog };

/** Loose views of a step result, for assertions. */

export const loose = (r: unknown): any => r;
