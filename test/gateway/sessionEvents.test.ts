import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  openMemoryBus,
  subjectMatches,
  type DeliveryHandle,
  type DeliveryInfo,
  type Envelope,
  type EventBus,
  type MemoryBus,
} from '../../src/bus/index.js';
import {
  encodeToken,
  gatewaySessionPattern,
  gatewaySubject,
  makeEnvelope,
  parseGatewaySubject,
  subjectFor,
} from '../../src/events/index.js';
import type { StepResult, Turn, TurnEngine, TurnRequest } from '../../src/turn/index.js';
import {
  publishSessionEvent,
  startSessionEventConsumer,
  type SessionEventConsumer,
} from '../../src/gateway/sessionEvents/index.js';
import { createUser } from '@nats-io/nkeys';
import { parseConfig, type ResolvedConfig } from '../../src/config/index.js';

/** A principal "app" (its nkey's public key is the command token) that may use agent-1/dev/box with owner rights. */
const APP = createUser().getPublicKey();
const OTHER = createUser().getPublicKey();
function consumerConfig(): ResolvedConfig {
  const parsed = parseConfig(
    {
      agents: { 'agent-1': {} },
      profiles: { dev: {} },
      sandboxes: { box: {} },
      mcpServers: { global: { url: 'http://127.0.0.1:1/global' } },
      requestMcpServers: { servers: { fs: { command: 'node', args: ['fs.js'] } }, urls: ['http://127.0.0.1:1/*'] },
      principals: {
        app: {
          nkey: APP,
          agents: ['default', 'agent-1'],
          profiles: ['default', 'dev'],
          sandboxes: ['default', 'box'],
          owner: true,
        },
        other: { nkey: OTHER },
      },
    },
    undefined,
    { cwd: process.cwd() },
  );
  if (!parsed.ok) throw new Error(parsed.error.message);
  return parsed.value.config;
}

/** A fake engine that records what it is asked; `gate` lets a test hold an invocation until it says so. */
function fakeEngine() {
  const log: string[] = [];
  const requests: TurnRequest[] = [];
  const gates = new Map<string, Promise<void>>();
  let n = 0;
  const engine: TurnEngine & {
    log: string[];
    requests: TurnRequest[];
    gates: typeof gates;
    failStart?: boolean;
    throwInvoke?: boolean;
  } = {
    log,
    requests,
    gates,
    async startTurn(req) {
      requests.push(req);
      log.push(`start ${req.sessionId}/${req.turnId ?? '?'}`);
      if (engine.failStart) return { ok: false, error: { code: 'policy.invalid', message: 'agent "x" has no policy' } };
      const turnId = req.turnId ?? `engine-turn-${++n}`;
      const turn: Turn = {
        sessionId: req.sessionId,
        turnId,
        exposure: {
          mode: req.mode ?? 'tools',
          tools: [
            {
              type: 'function',
              function: { name: 'tool_search', description: 'search', parameters: { type: 'object' } },
            },
          ],
          nameToId: new Map(),
          bytes: 123,
          schemasUpFront: 1,
        },
        async invoke(toolName, args): Promise<StepResult> {
          log.push(`invoke ${req.sessionId}/${turnId} ${toolName} ${JSON.stringify(args)}`);
          await gates.get(toolName);
          if (engine.throwInvoke) throw new Error('engine bug');
          if (toolName === 'blocked_tool')
            return { ok: false, error: { code: 'call.blocked', message: 'blocked by policy: denied' } };
          if (toolName === 'client_pick')
            return { ok: true, pending: true, callId: 'cc1', toolName: 'pick', args: { n: 1 } };
          log.push(`done ${req.sessionId}/${turnId} ${toolName}`);
          return { ok: true, value: { echoed: args } };
        },
        async clientResult(callId, result) {
          log.push(`clientResult ${turnId} ${callId} ${result.ok} ${result.content}`);
        },
        async end(outcome) {
          log.push(
            `end ${req.sessionId}/${turnId} ${outcome?.failed ? `${outcome.failed.code}: ${outcome.failed.reason}` : 'completed'}`,
          );
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
    async closeSession(sessionId) {
      log.push(`close ${sessionId}`);
    },
    async close() {},
  };
  return engine;
}

let bus: MemoryBus;
let engine: ReturnType<typeof fakeEngine>;
let consumer: SessionEventConsumer;
let answers: Envelope[];
let errors: string[];
/** The consumer's bus delivery, captured so a test can redeliver like JetStream does. */
let deliver: (e: Envelope, info?: DeliveryInfo) => void;

beforeEach(async () => {
  bus = await openMemoryBus({ logPath: false });
  engine = fakeEngine();
  answers = [];
  errors = [];
  bus.subscribe(gatewaySessionPattern(), (e) => {
    if (['gateway.turn.opened', 'gateway.tool.answered', 'gateway.event.rejected'].includes(e.type)) answers.push(e);
  });
  const capturing: EventBus = {
    publish: (e) => bus.publish(e),
    subscribe: (pattern, onEvent, opts) => {
      deliver = onEvent;
      return bus.subscribe(pattern, onEvent, opts);
    },
    serve: (subject, handler, opts) => bus.serve(subject, handler, opts),
    request: (subject, payload, opts) => bus.request(subject, payload, opts),
    replay: (filter) => bus.replay(filter),
    close: () => bus.close(),
  };
  consumer = startSessionEventConsumer({
    bus: capturing,
    engine,
    config: consumerConfig(),
    onError: (m) => errors.push(m),
  });
});
afterEach(async () => {
  await consumer.stop();
  await bus.close();
});

const requested = {
  requestId: 'req-1',
  agentId: 'agent-1',
  profile: 'dev',
  sandboxId: 'box',
  owner: true,
  mode: 'code' as const,
  harness: 'pi',
};

async function settle() {
  await consumer.idle();
}

/** Publishes as principal APP unless told otherwise. */
const pub: typeof publishSessionEvent = (b, sid, type, data, opts = {}) =>
  publishSessionEvent(b, sid, type, data, { principal: APP, ...opts });

describe('gateway session events intake', () => {
  it('starts a turn with every fact of the request and answers with the exposure', async () => {
    const r = await pub(
      bus,
      's1',
      'gateway.turn.requested',
      {
        ...requested,
        clientId: 'app',
        clientTools: [{ name: 'pick', description: 'pick one', parameters: { type: 'object' } }],
        mcpServers: [{ name: 'fs' }, { name: 'web', url: 'http://127.0.0.1:1/mcp' }],
      },
      { turnId: 't1', principal: APP },
    );
    expect(r.ok).toBe(true);
    await settle();
    expect(engine.requests).toEqual([
      {
        sessionId: 's1',
        turnId: 't1',
        agentId: 'agent-1',
        profile: 'dev',
        sandboxId: 'box',
        owner: true,
        mode: 'code',
        harness: 'pi',
        clientId: 'app',
        clientTools: [{ name: 'pick', description: 'pick one', parameters: { type: 'object' } }],
        mcpServers: { fs: { command: 'node', args: ['fs.js'] }, web: { url: 'http://127.0.0.1:1/mcp' } },
        // The command's id, recorded on turn.started, so a redelivery of it finds the turn it opened.
        requestKey: expect.stringMatching(/^cmd:[0-9a-f]{40}$/) as unknown as string,
      },
    ]);
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({
      type: 'gateway.turn.opened',
      sessionId: 's1',
      turnId: 't1',
      causationId: r.ok ? r.value.id : '',
      data: {
        requestId: 'req-1',
        ok: true,
        turnId: 't1',
        mode: 'code',
        bytes: 123,
        schemasUpFront: 1,
        tools: [{ function: { name: 'tool_search' } }],
      },
    });
  });

  it('runs tool invocations and answers each with its step result, finding the turn by id or by request id', async () => {
    await pub(bus, 's1', 'gateway.turn.requested', { requestId: 'req-9' }); // no turn id: the gateway names it
    await settle();
    const turnId = (answers[0]!.data as { turnId: string }).turnId;
    // Named after the command (the same name for a redelivery of it).
    expect(turnId).toMatch(/^t-[0-9a-f]{24}$/);
    await pub(bus, 's1', 'gateway.tool.invoked', {
      requestId: 'req-9',
      callId: 'k1',
      tool: 'tool_search',
      args: { query: 'x' },
    });
    await pub(
      bus,
      's1',
      'gateway.tool.invoked',
      { requestId: 'req-9', callId: 'k2', tool: 'blocked_tool', args: {} },
      { turnId },
    );
    await pub(
      bus,
      's1',
      'gateway.tool.invoked',
      { requestId: 'req-9', callId: 'k3', tool: 'client_pick', args: {} },
      { turnId },
    );
    await pub(
      bus,
      's1',
      'gateway.tool.invoked',
      {
        requestId: 'req-9',
        callId: 'cc1',
        tool: 'pick',
        args: {},
        clientResult: { ok: true, value: { colour: 'red' } },
      },
      { turnId },
    );
    await settle();
    const tools = answers.filter((a) => a.type === 'gateway.tool.answered').map((a) => a.data);
    expect(tools).toEqual([
      {
        requestId: 'req-9',
        callId: 'k1',
        tool: 'tool_search',
        result: { ok: true, value: { echoed: { query: 'x' } } },
      },
      {
        requestId: 'req-9',
        callId: 'k2',
        tool: 'blocked_tool',
        result: { ok: false, error: { code: 'call.blocked', message: 'blocked by policy: denied' } },
      },
      {
        requestId: 'req-9',
        callId: 'k3',
        tool: 'client_pick',
        result: { ok: true, pending: true, callId: 'cc1', toolName: 'pick', args: { n: 1 } },
      },
      {
        requestId: 'req-9',
        callId: 'cc1',
        tool: 'pick',
        result: { ok: true, value: { recorded: true, callId: 'cc1' } },
      },
    ]);
    expect(engine.log).toContain(`clientResult ${turnId} cc1 true {"colour":"red"}`);
  });

  it('ends turns (completed, failed, cancelled) and closes the session, ending what is still open', async () => {
    for (const t of ['a', 'b', 'c', 'd'])
      await pub(bus, 's2', 'gateway.turn.requested', { requestId: `r-${t}` }, { turnId: t });
    await pub(
      bus,
      's2',
      'gateway.turn.ended',
      { requestId: 'r-a', outcome: 'completed', durationMs: 5 },
      { turnId: 'a' },
    );
    await pub(
      bus,
      's2',
      'gateway.turn.ended',
      { requestId: 'r-b', outcome: 'failed', reason: 'provider down' },
      { turnId: 'b' },
    );
    await pub(bus, 's2', 'gateway.turn.ended', { requestId: 'r-c', outcome: 'cancelled' });
    await pub(bus, 's2', 'gateway.session.closed', { reason: 'client' });
    await settle();
    expect(engine.log.filter((l) => !l.startsWith('start'))).toEqual([
      'end s2/a completed',
      'end s2/b turn.failed: provider down',
      'end s2/c turn.cancelled: the gateway reported the turn cancelled',
      'end s2/d session.closed: the session closed (client) before the turn ended',
      'close s2',
    ]);
    // after the close nothing is open: a tool invocation is answered with an error, not run
    await pub(
      bus,
      's2',
      'gateway.tool.invoked',
      { requestId: 'r-d', callId: 'late', tool: 'tool_search', args: {} },
      { turnId: 'd' },
    );
    await settle();
    expect(answers.at(-1)!.data).toMatchObject({
      callId: 'late',
      result: { ok: false, error: { code: 'gateway.unknownTurn' } },
    });
    expect(engine.log.some((l) => l.startsWith('invoke'))).toBe(false);
  });

  it('answers a malformed event with a rejection that says why, keeps it on the bus, and goes on', async () => {
    const bad = makeEnvelope({
      type: 'gateway.turn.requested',
      sessionId: 's3',
      turnId: 't1',
      seq: 0,
      at: new Date(),
      causationId: null,
      data: { agentId: 7 } as never,
      principal: APP,
    });
    await bus.publish(bad);
    await settle();
    expect(engine.requests).toHaveLength(0);
    expect(answers).toHaveLength(1);
    const rej = answers[0]!;
    expect(rej).toMatchObject({ type: 'gateway.event.rejected', sessionId: 's3', turnId: 't1', causationId: bad.id });
    expect(rej.data).toMatchObject({
      code: 'event.invalid',
      rejectedId: bad.id,
      rejectedType: 'gateway.turn.requested',
      subject: subjectFor(bad),
      rawBytes: Buffer.byteLength(JSON.stringify(bad)),
    });
    const data = rej.data as { reason: string; rawDigest: string; problems: Array<{ path: string }> };
    expect(data.rawDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(data.reason).toContain('/data/requestId');
    expect(data.problems.map((p) => p.path)).toEqual(expect.arrayContaining(['/data/requestId', '/data/agentId']));
    // kept on the record (the embedded log / the GATEWAY_SESSIONS stream), next to the event it rejects
    expect(bus.stats().stored).toBe(2);
    // the consumer is still alive
    await pub(bus, 's3', 'gateway.turn.requested', { requestId: 'ok' }, { turnId: 't2', principal: APP });
    await settle();
    expect(engine.requests).toHaveLength(1);
    expect(consumer.stats()).toMatchObject({ rejected: 1, processed: 1 });
  });

  it('rejects an unknown event type and a value that is not an envelope at all, never crashing', async () => {
    const unknown = {
      ...makeEnvelope({
        type: 'gateway.session.closed',
        sessionId: 's4',
        turnId: '',
        seq: 0,
        at: new Date(),
        causationId: null,
        data: { reason: 'idle' },
      }),
      type: 'gateway.turn.paused',
    };
    // An unknown type is no command: it is not even routed to gateway.cmd; delivered there anyway, it is refused.
    deliver(unknown);
    deliver({ nonsense: true } as unknown as Envelope);
    deliver(null as unknown as Envelope);
    await settle();
    const rejections = answers.filter((a) => a.type === 'gateway.event.rejected');
    expect(rejections.map((r) => (r.data as { code: string }).code)).toEqual([
      'event.unknownType',
      'event.invalid',
      'event.invalid',
    ]);
    expect(rejections[0]!.data).toMatchObject({
      rejectedType: 'gateway.turn.paused',
      subject: 'gateway.session.s4.turn_paused',
    });
    expect(rejections[0]!.sessionId).toBe('s4');
    expect(rejections[1]!.sessionId).toBe('');
    expect(engine.log).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('rejects a turn end for a turn that is not open', async () => {
    await pub(bus, 's5', 'gateway.turn.ended', { requestId: 'ghost', outcome: 'completed' }, { turnId: 'ghost' });
    await settle();
    expect(answers[0]).toMatchObject({ type: 'gateway.event.rejected', data: { code: 'gateway.unknownTurn' } });
  });

  it('ignores a duplicate delivery of an event id', async () => {
    const r = await pub(bus, 's6', 'gateway.turn.requested', { requestId: 'r' }, { turnId: 't', id: 'evt-dup' });
    await settle();
    expect(r.ok).toBe(true);
    // JetStream redelivers (a member died before its ack), a retrying publisher sends it again
    deliver(r.ok ? r.value : (undefined as never));
    await bus.publish(r.ok ? r.value : (undefined as never));
    await settle();
    expect(engine.requests).toHaveLength(1);
    expect(answers).toHaveLength(1);
    expect(consumer.stats().duplicates).toBe(1);
  });

  it('settles a work-queue delivery only once its answer is out; one delivered again while in hand settles with it', async () => {
    const settled: string[] = [];
    const handle = (name: string): DeliveryHandle => ({
      token: name,
      done: () => settled.push(`${name} done after ${answers.length} answer(s)`),
      retry: () => settled.push(`${name} retry`),
      release: () => settled.push(`${name} release`),
    });
    const cmd = makeEnvelope({
      id: 'evt-held',
      type: 'gateway.turn.requested',
      sessionId: 's7',
      turnId: 't',
      seq: 0,
      at: new Date(),
      causationId: null,
      principal: APP,
      data: { requestId: 'r' },
    });
    deliver(cmd, { subject: subjectFor(cmd), delivery: handle('first') });
    deliver(cmd, { subject: subjectFor(cmd), delivery: handle('again'), redelivered: true });
    expect(settled).toEqual([]);
    await settle();
    expect(settled).toEqual(['first done after 1 answer(s)', 'again done after 1 answer(s)']);
    // Handled already (its acknowledgement was lost): acknowledged at once, not run or answered again.
    deliver(cmd, { subject: subjectFor(cmd), delivery: handle('late'), redelivered: true });
    await settle();
    expect(settled[2]).toBe('late done after 1 answer(s)');
    expect(engine.requests).toHaveLength(1);
    expect(answers).toHaveLength(1);
  });

  it('round-trips session and turn ids with ".", "*", ">" and spaces through the subject encoding', async () => {
    const sid = 'acme.prod *> session 1';
    const tid = 'turn.1 > *';
    const subjects: string[] = [];
    bus.subscribe(gatewaySessionPattern(sid), (e) => subjects.push(subjectFor(e)));
    bus.subscribe('gateway.cmd.>', (e) => subjects.push(subjectFor(e)));
    const r = await pub(bus, sid, 'gateway.turn.requested', { requestId: 'q' }, { turnId: tid, principal: APP });
    await pub(
      bus,
      sid,
      'gateway.tool.invoked',
      { requestId: 'q', callId: 'c', tool: 'tool_search', args: {} },
      { turnId: tid, principal: APP },
    );
    await settle();
    expect(r.ok).toBe(true);
    const subject = gatewaySubject(sid, 'gateway.turn.requested');
    expect(subject.split('.')).toHaveLength(4);
    expect(encodeToken(sid)).not.toMatch(/[.*> ]/);
    expect(parseGatewaySubject(subject)).toEqual({
      ok: true,
      value: { sessionId: sid, type: 'gateway.turn.requested' },
    });
    expect(engine.requests[0]).toMatchObject({ sessionId: sid, turnId: tid });
    expect(engine.log).toContain(`invoke ${sid}/${tid} tool_search {}`);
    // the answers land in the session's own subject space, not in another session's
    // commands on gateway.cmd.<principal>.<session>.<type>, answers on gateway.session.<session>.<type>.<principal>
    expect(subjects).toEqual([
      `gateway.cmd.${APP}.${encodeToken(sid)}.turn_requested`,
      `gateway.session.${encodeToken(sid)}.turn_opened.${APP}`,
      `gateway.cmd.${APP}.${encodeToken(sid)}.tool_invoked`,
      `gateway.session.${encodeToken(sid)}.tool_answered.${APP}`,
    ]);
    expect(parseGatewaySubject(subjects[1]!)).toEqual({
      ok: true,
      value: { sessionId: sid, type: 'gateway.turn.opened', principal: APP },
    });
    for (const s of subjects) expect(subjectMatches(gatewaySessionPattern('acme'), s)).toBe(false);
  });

  it("keeps one session's events in order while other sessions go on", async () => {
    let release!: () => void;
    engine.gates.set(
      'slow_tool',
      new Promise<void>((r) => {
        release = r;
      }),
    );
    await pub(bus, 'A', 'gateway.turn.requested', { requestId: 'ra' }, { turnId: 'ta' });
    await pub(
      bus,
      'A',
      'gateway.tool.invoked',
      { requestId: 'ra', callId: 'a1', tool: 'slow_tool', args: {} },
      { turnId: 'ta' },
    );
    await pub(
      bus,
      'A',
      'gateway.tool.invoked',
      { requestId: 'ra', callId: 'a2', tool: 'fast_tool', args: {} },
      { turnId: 'ta' },
    );
    await pub(bus, 'A', 'gateway.turn.ended', { requestId: 'ra', outcome: 'completed' }, { turnId: 'ta' });
    await pub(bus, 'B', 'gateway.turn.requested', { requestId: 'rb' }, { turnId: 'tb' });
    await pub(
      bus,
      'B',
      'gateway.tool.invoked',
      { requestId: 'rb', callId: 'b1', tool: 'fast_tool', args: {} },
      { turnId: 'tb' },
    );
    // B is answered while A's first invocation is still held
    for (let i = 0; i < 50 && !answers.some((a) => (a.data as { callId?: string }).callId === 'b1'); i++)
      await new Promise((r) => setImmediate(r));
    expect(answers.some((a) => (a.data as { callId?: string }).callId === 'b1')).toBe(true);
    expect(engine.log.filter((l) => l.startsWith('invoke A') || l.startsWith('end A'))).toEqual([
      'invoke A/ta slow_tool {}',
    ]);
    release();
    await settle();
    expect(engine.log.filter((l) => / A\//.test(l))).toEqual([
      'start A/ta',
      'invoke A/ta slow_tool {}',
      'done A/ta slow_tool',
      'invoke A/ta fast_tool {}',
      'done A/ta fast_tool',
      'end A/ta completed',
    ]);
    expect(
      answers
        .filter((a) => a.sessionId === 'A' && a.type === 'gateway.tool.answered')
        .map((a) => (a.data as { callId: string }).callId),
    ).toEqual(['a1', 'a2']);
  });

  it('turns engine failures into answers and reports them, never a crash', async () => {
    engine.failStart = true;
    await pub(bus, 's7', 'gateway.turn.requested', { requestId: 'r1' }, { turnId: 't1' });
    await pub(bus, 's7', 'gateway.turn.requested', { requestId: 'r2', harness: 'vim' }, { turnId: 't2' });
    await settle();
    expect(answers.map((a) => a.data)).toEqual([
      { requestId: 'r1', ok: false, error: { code: 'policy.invalid', message: 'agent "x" has no policy' } },
      expect.objectContaining({
        requestId: 'r2',
        ok: false,
        error: expect.objectContaining({ code: 'gateway.badHarness' }),
      }),
    ]);
    engine.failStart = false;
    engine.throwInvoke = true;
    await pub(bus, 's7', 'gateway.turn.requested', { requestId: 'r3' }, { turnId: 't3' });
    await pub(
      bus,
      's7',
      'gateway.tool.invoked',
      { requestId: 'r3', callId: 'x', tool: 'tool_search', args: {} },
      { turnId: 't3' },
    );
    await settle();
    expect(answers.at(-1)!.data).toMatchObject({
      callId: 'x',
      result: { ok: false, error: { code: 'gateway.engineFailed' } },
    });
    expect(errors.some((m) => m.includes('engine bug'))).toBe(true);
  });

  it('answers a second request for an open turn without starting it twice', async () => {
    await pub(bus, 's8', 'gateway.turn.requested', { requestId: 'r1' }, { turnId: 't1' });
    await pub(bus, 's8', 'gateway.turn.requested', { requestId: 'r1-again' }, { turnId: 't1' });
    await settle();
    expect(engine.requests).toHaveLength(1);
    expect(answers[1]!.data).toMatchObject({ ok: false, error: { code: 'gateway.turnExists' } });
  });

  it('publishSessionEvent refuses data that does not fit the schema', async () => {
    const r = await pub(bus, 's9', 'gateway.turn.ended', { requestId: 'r', outcome: 'exploded' } as never);
    expect(r).toMatchObject({ ok: false, error: { code: 'gateway.badEvent' } });
    expect(bus.stats().stored).toBe(0);
  });

  it('takes the identity from the principal: asking for more than it may use is refused, naming what was asked and allowed', async () => {
    await pub(
      bus,
      'p1',
      'gateway.turn.requested',
      { requestId: 'own', owner: true },
      { turnId: 't1', principal: OTHER },
    );
    await pub(
      bus,
      'p2',
      'gateway.turn.requested',
      { requestId: 'agent', agentId: 'agent-1' },
      { turnId: 't1', principal: OTHER },
    );
    await pub(bus, 'p3', 'gateway.turn.requested', { requestId: 'none' }, { turnId: 't1', principal: 'default' });
    await settle();
    expect(engine.requests).toEqual([]);
    const rejected = answers
      .filter((a) => a.type === 'gateway.event.rejected')
      .map((a) => a.data as { code: string; reason: string });
    expect(rejected.map((r) => r.code)).toEqual(['principal.notAllowed', 'principal.notAllowed', 'principal.unknown']);
    expect(rejected[0]!.reason).toContain('owner rights');
    expect(rejected[1]!.reason).toMatch(/asked for agent "agent-1" but may use only "default"/);
    const opened = answers
      .filter((a) => a.type === 'gateway.turn.opened')
      .map((a) => a.data as { ok: boolean; error: { code: string } });
    expect(opened.map((o) => [o.ok, o.error.code])).toEqual([
      [false, 'principal.notAllowed'],
      [false, 'principal.notAllowed'],
      [false, 'principal.unknown'],
    ]);
    // The same request from a principal with the rights runs, and an absent field takes the principal's first allowed value.
    await pub(
      bus,
      'p4',
      'gateway.turn.requested',
      { requestId: 'ok', owner: true, agentId: 'agent-1' },
      { turnId: 't1' },
    );
    await settle();
    expect(engine.requests).toEqual([
      expect.objectContaining({
        sessionId: 'p4',
        agentId: 'agent-1',
        profile: 'default',
        sandboxId: 'default',
        owner: true,
      }),
    ]);
  });

  it("refuses a command on another principal's session", async () => {
    await pub(bus, 'mine', 'gateway.turn.requested', { requestId: 'r1' }, { turnId: 't1' });
    await pub(
      bus,
      'mine',
      'gateway.tool.invoked',
      { requestId: 'r1', callId: 'c1', tool: 'tool_search', args: {} },
      { turnId: 't1', principal: OTHER },
    );
    await pub(bus, 'mine', 'gateway.turn.requested', { requestId: 'r2' }, { turnId: 't2', principal: OTHER });
    await settle();
    expect(engine.requests).toHaveLength(1);
    expect(engine.log.some((l) => l.startsWith('invoke'))).toBe(false);
    expect(
      answers.filter((a) => a.type === 'gateway.event.rejected').map((a) => (a.data as { code: string }).code),
    ).toEqual(['gateway.sessionNotYours', 'gateway.sessionNotYours']);
    expect(answers.find((a) => a.type === 'gateway.tool.answered')!.data).toMatchObject({
      result: { ok: false, error: { code: 'gateway.sessionNotYours' } },
    });
  });

  it('never starts a process a request names, never replaces a configured server, and takes only allowed URLs', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['cmd', [{ name: 'evil', command: 'sh', args: ['-c', 'touch /tmp/pwned'] }], 'request.mcpServerNotAllowed'],
      ['fs-own-command', [{ name: 'fs', command: 'sh' }], 'request.mcpServerNotAllowed'],
      ['replace', [{ name: 'global', url: 'http://127.0.0.1:1/other' }], 'request.mcpServerReplaces'],
      ['url', [{ name: 'web', url: 'http://evil.example/mcp' }], 'request.mcpServerNotAllowed'],
      ['unknown-name', [{ name: 'nope' }], 'request.mcpServerNotAllowed'],
    ];
    for (const [sid, mcpServers] of cases)
      await pub(bus, sid, 'gateway.turn.requested', { requestId: sid, mcpServers } as never, { turnId: 't' });
    await settle();
    expect(engine.requests).toEqual([]);
    const codes = answers
      .filter((a) => a.type === 'gateway.turn.opened')
      .map((a) => (a.data as { error: { code: string } }).error.code);
    expect(codes).toEqual(cases.map((c) => c[2]));
    const reasons = answers
      .filter((a) => a.type === 'gateway.event.rejected')
      .map((a) => (a.data as { reason: string }).reason);
    expect(reasons[0]).toContain('nothing a request says starts a process');
    expect(reasons[3]).toContain('requestMcpServers.urls');
  });
});

describe('gateway session commands without principals', () => {
  it('runs every command as default, owner false, and refuses one that asks for more', async () => {
    const b = await openMemoryBus({ logPath: false });
    const eng = fakeEngine();
    const got: Envelope[] = [];
    b.subscribe(gatewaySessionPattern(), (e) => got.push(e));
    const c = startSessionEventConsumer({ bus: b, engine: eng });
    await publishSessionEvent(b, 'd1', 'gateway.turn.requested', { requestId: 'r1' }, { turnId: 't1' });
    await publishSessionEvent(b, 'd2', 'gateway.turn.requested', { requestId: 'r2', owner: true }, { turnId: 't1' });
    await publishSessionEvent(
      b,
      'd3',
      'gateway.turn.requested',
      { requestId: 'r3', mcpServers: [{ name: 'x', command: 'sh' }] },
      { turnId: 't1' },
    );
    await c.idle();
    expect(eng.requests).toEqual([
      {
        sessionId: 'd1',
        turnId: 't1',
        agentId: 'default',
        profile: 'default',
        sandboxId: 'default',
        owner: false,
        requestKey: expect.stringMatching(/^cmd:/) as unknown as string,
      },
    ]);
    expect(
      got.filter((e) => e.type === 'gateway.event.rejected').map((e) => (e.data as { code: string }).code),
    ).toEqual(['principal.notAllowed', 'request.mcpServerNotAllowed']);
    await c.stop();
    await b.close();
  });
});
