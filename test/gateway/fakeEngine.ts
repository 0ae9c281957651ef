// A small fake TurnEngine for the gateway tests: fake plugin tools, client tools, the three exposures built
// with the real expose(), and a code run that evaluates the body in-process against a tools bridge
// (trusted test code only; the real engine runs it in the sandbox).
import { clientTools, type ToolEntry } from '../../src/catalog/index.js';
import { expose, type ExposureMode } from '../../src/expose/index.js';
import {
  checkTurnRequest,
  type StepResult,
  type Turn,
  type TurnEngine,
  type TurnRequest,
} from '../../src/turn/index.js';

export interface FakeCall {
  id: string;
  args: Record<string, unknown>;
  via: string;
}

export interface FakeEngine extends TurnEngine {
  requests: TurnRequest[];
  calls: FakeCall[];
  clientResults: Array<{ callId: string; result: { ok: boolean; content: string } }>;
  ended: Array<{ turnId: string; outcome?: { failed?: { code: string; reason: string }; promptBytes?: number } }>;
  invocations: Array<{ tool: string; args: unknown }>;
  reset(): void;
}

export function fakePluginTools(count: number): ToolEntry[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `openclaw:fake:fake_plugin_tool_${i}`,
    source: 'openclaw' as const,
    owner: 'fake',
    sourceName: 'fake',
    name: `fake_plugin_tool_${i}`,
    description: `Fake plugin tool number ${i}: echoes its input for tests of the gateway.`,
    inputSchema: {
      type: 'object',
      properties: {
        text: { type: 'string', description: 'Any text.' },
        count: { type: 'integer' },
        flag: { type: 'boolean' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        note: { type: 'string', description: 'Optional.' },
      },
      required: ['text', 'count', 'flag', 'unit'],
    },
    origin: 'plugin' as const,
    trusted: true,
  }));
}

export interface FakeEngineOptions {
  mode: ExposureMode;
  tools?: number;
  /** Makes invoke throw (a bug in the engine). */
  throwOnInvoke?: boolean;
  /** Makes startTurn fail with this error. */
  startError?: { code: string; message: string };
}

export function createFakeEngine(opts: FakeEngineOptions): FakeEngine {
  const plugin = fakePluginTools(opts.tools ?? 30);
  let turnSeq = 0;
  let callSeq = 0;
  let closed = false;
  const engine: FakeEngine = {
    requests: [],
    calls: [],
    clientResults: [],
    ended: [],
    invocations: [],
    reset() {
      engine.requests.length = 0;
      engine.calls.length = 0;
      engine.clientResults.length = 0;
      engine.ended.length = 0;
      engine.invocations.length = 0;
    },
    async startTurn(req) {
      engine.requests.push(req);
      // As the real engine (the TurnEngine contract, test/turn/engineContract.ts): closed, bad requests refused.
      if (closed)
        return { ok: false, error: { code: 'engine.closed', message: 'The turn engine is closed: start a new one.' } };
      const checked = checkTurnRequest(req);
      if (!checked.ok) return checked;
      if (opts.startError) return { ok: false, error: opts.startError };
      let ended = false;
      const turnId = req.turnId ?? `turn-${++turnSeq}`;
      const entries = [...plugin, ...clientTools(req.clientTools ?? [], req.clientId ?? 'client')];
      const exposure = expose({ mode: req.mode ?? opts.mode, entries });
      const byId = new Map(entries.map((e) => [e.id, e]));
      const resolve = (idOrName: unknown): ToolEntry | undefined =>
        typeof idOrName === 'string' ? (byId.get(idOrName) ?? entries.find((e) => e.name === idOrName)) : undefined;

      const call = async (entry: ToolEntry | undefined, args: unknown, via: string): Promise<StepResult> => {
        if (!entry) return { ok: false, error: { code: 'tool.notFound', message: 'no such tool' } };
        const a = (args && typeof args === 'object' ? args : {}) as Record<string, unknown>;
        if (entry.source === 'client')
          return { ok: true, pending: true, callId: `client-call-${++callSeq}`, toolName: entry.name, args: a };
        engine.calls.push({ id: entry.id, args: a, via });
        return { ok: true, value: { tool: entry.name, echoed: a } };
      };
      const search = (query: string, limit = 8) => {
        const words = query.toLowerCase().split(/\s+/).filter(Boolean);
        const scored = entries
          .map((e) => ({
            e,
            score:
              words.filter((w) => e.name.toLowerCase().split('_').includes(w)).length +
              (e.name === words.join('_') ? 10 : 0),
          }))
          .filter((x) => x.score > 0)
          .sort((a, b) => b.score - a.score);
        return {
          results: scored.slice(0, limit).map(({ e }) => ({
            id: e.id,
            source: e.source,
            sourceName: e.sourceName,
            name: e.name,
            description: e.description,
          })),
          matched: scored.length,
          catalogSize: entries.length,
        };
      };
      const describe = (id: unknown) => {
        const e = resolve(id);
        return e ? { id: e.id, name: e.name, description: e.description, inputSchema: e.inputSchema } : undefined;
      };

      const turn: Turn = {
        sessionId: req.sessionId,
        turnId,
        exposure,
        async invoke(toolName, args) {
          engine.invocations.push({ tool: toolName, args });
          if (opts.throwOnInvoke) throw new Error('fake engine bug');
          if (ended)
            return {
              ok: false,
              error: {
                code: 'turn.ended',
                message: `The turn ${turnId} has ended; start a new turn to invoke ${toolName}.`,
              },
            };
          const a = (args ?? {}) as Record<string, unknown>;
          if (exposure.mode === 'direct') {
            const id = exposure.nameToId.get(toolName);
            if (id === undefined)
              return { ok: false, error: { code: 'tool.notExposed', message: `${toolName} is not exposed` } };
            return call(byId.get(id), args, 'direct');
          }
          if (exposure.mode === 'tools') {
            if (toolName === 'tool_search')
              return { ok: true, value: search(String(a['query'] ?? ''), Number(a['limit'] ?? 8)) };
            if (toolName === 'tool_describe') {
              const d = describe(a['id']);
              return d
                ? { ok: true, value: d }
                : { ok: false, error: { code: 'tool.notFound', message: `no tool ${String(a['id'])}` } };
            }
            if (toolName === 'tool_call') return call(resolve(a['id']), a['args'] ?? {}, 'tool_call');
          }
          if (exposure.mode === 'code' && toolName === 'tool_search_code') {
            // As the real code run: a client tool called from the body answers the guest with a pending marker, and
            // the run's outcome lists the calls handed back (pendingClientCalls) beside its value.
            const pendingClientCalls: Array<{ callId: string; toolName: string; args: Record<string, unknown> }> = [];
            const tools = {
              search: async (q: string, o?: { limit?: number }) => search(q, o?.limit).results,
              describe: async (id: string) => describe(id),
              call: async (id: string, callArgs: unknown) => {
                const r = await call(resolve(id), callArgs, 'code');
                if ('pending' in r) {
                  pendingClientCalls.push({ callId: r.callId, toolName: r.toolName, args: r.args });
                  return { pending: true, callId: r.callId, toolName: r.toolName };
                }
                if (!r.ok) throw r.error;
                return r.value;
              },
            };
            const handedBack = () => (pendingClientCalls.length > 0 ? { pendingClientCalls } : {});
            const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (
              ...a: string[]
            ) => (t: unknown) => Promise<unknown>;
            try {
              const value = await new AsyncFunction('tools', String(a['code'] ?? ''))(tools);
              return { ok: true, value: { result: value, logs: [] }, ...handedBack() } as StepResult;
            } catch (err) {
              return {
                ok: false,
                error: { code: 'code.failed', message: err instanceof Error ? err.message : JSON.stringify(err) },
                ...handedBack(),
              } as StepResult;
            }
          }
          return { ok: false, error: { code: 'tool.notExposed', message: `${toolName} is not exposed` } };
        },
        async clientResult(callId, result) {
          engine.clientResults.push({ callId, result });
        },
        async end(outcome) {
          if (ended) return;
          ended = true;
          engine.ended.push(outcome === undefined ? { turnId } : { turnId, outcome });
        },
      };
      return { ok: true, value: turn };
    },
    adoptSession: (sessionId: string) =>
      Promise.resolve({
        ok: false as const,
        error: { code: 'turn.adoptUnavailable', message: `no adoption of ${sessionId} in this fake` },
      }),
    releaseSession: () => Promise.resolve(),
    async closeSession() {},
    async close() {
      closed = true;
    },
  };
  return engine;
}
