// Attacks on a secured NATS deployment, made as the weakest principal that could try each (no credentials, a client,
// a sandbox), against a real nats-server started with the config `toolsearch nats-auth` writes. Each must be
// refused by the server (a permission violation naming the subject) or by the gateway (a rule's code), and nothing
// may run: a witness file records every tool that ran and every program a request tried to start.
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, nkeyAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { startNatsServerWithConfig, type NatsServer } from '../support/natsServer.js';
import { natsAuthCommand } from '../../src/cli/commands/natsAuth.js';
import { turnCommand } from '../../src/cli/commands/turn.js';
import {
  busConnectOptions,
  isBusError,
  natsConnectSettings,
  openNatsBus,
  readNkeySeed,
  type NatsBus,
} from '../../src/bus/nats/index.js';
import type { Envelope } from '../../src/bus/index.js';
import { parseConfig, type ResolvedConfig } from '../../src/config/index.js';
import { answerPattern, makeEnvelope } from '../../src/events/index.js';
import { startGateway, startRoleServices, type RoleServices, type RunningGateway } from '../../src/app/index.js';
import { publishSessionEvent } from '../../src/gateway/index.js';
import { approvalsCommand, approveCommand } from '../../src/cli/commands/approvals.js';
import { approverNames } from '../../src/app/index.js';
import { approverSubjectOf } from '../../src/bus/nats/index.js';
import { auditReport } from '../../src/audit/index.js';
import { noLagAdmission } from '../support/gateway.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
async function waitFor(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

let dir: string;
let auth: string;
/** Whether the test approver answers every approval request on the bus. */
let answerOnBus = true;
let server: NatsServer;
let config: ResolvedConfig;
let gateway: RunningGateway;
let policy: { services: RoleServices; bus: NatsBus } | undefined;
let sandbox: { services: RoleServices; bus: NatsBus };
let witness: string;
let shWitness: string;
const keys: Record<string, string> = {};
const open: Array<{ close(): Promise<void> }> = [];

const seed = (name: string) => join(auth, `${name}.nk`);
const ran = (): string[] =>
  existsSync(witness)
    ? readFileSync(witness, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
    : [];

/** A bus connected as one principal of the deployment, the way every command connects (`--nats-nkey FILE`). */
async function busAs(name: string, extra: Record<string, unknown> = {}): Promise<NatsBus> {
  const c = natsConnectSettings({ url: server.url, flags: { nkeyFile: seed(name) } });
  if (!c.ok || c.value === undefined) throw new Error('no settings');
  const bus = await openNatsBus({
    ...busConnectOptions(c.value),
    name: `attack-${name}`,
    manageStreams: false,
    connectTimeoutMs: 5000,
    publishTimeoutMs: 3000,
    ...extra,
  });
  open.push(bus);
  return bus;
}

/** A plain NATS connection as one principal, with every error the server sends it. */
async function rawAs(name: string): Promise<{ nc: NatsConnection; errors: string[] }> {
  const k = readNkeySeed(seed(name));
  if (!k.ok) throw new Error(k.error.message);
  const nc = await connect({
    servers: server.url,
    authenticator: nkeyAuthenticator(new TextEncoder().encode(k.value.seed)),
    inboxPrefix: `_INBOX.${k.value.publicKey}`,
  });
  const errors: string[] = [];
  void (async () => {
    for await (const s of nc.status()) if (s.type === 'error') errors.push(s.error.message);
  })();
  open.push({ close: () => nc.close() });
  return { nc, errors };
}

/** Commands as a client principal, and the gateway's answers to them (the answer subjects a client may read). */
async function clientSession(bus: NatsBus, sid: string) {
  const got: Envelope[] = [];
  // The answers to this principal's own commands: `gateway.session.<sid>.<type>.<its key>`.
  bus.subscribe(answerPattern(bus.principal, sid), (e) => got.push(e));
  await bus.ready();
  return {
    got,
    async open(data: Record<string, unknown>, turnId = 't1') {
      const r = await publishSessionEvent(
        bus,
        sid,
        'gateway.turn.requested',
        { requestId: `r-${turnId}`, ...data } as never,
        { turnId },
      );
      expect(r.ok).toBe(true);
      await waitFor(
        () => got.some((e) => e.type === 'gateway.turn.opened' && e.turnId === turnId),
        `turn_opened of ${sid}/${turnId}`,
      );
      return got.find((e) => e.type === 'gateway.turn.opened' && e.turnId === turnId)!.data as {
        ok: boolean;
        error?: { code: string; message: string };
      };
    },
    async code(body: string, callId: string, turnId = 't1') {
      const r = await publishSessionEvent(
        bus,
        sid,
        'gateway.tool.invoked',
        { requestId: `r-${turnId}`, callId, tool: 'tool_search_code', args: { code: body } },
        { turnId },
      );
      expect(r.ok).toBe(true);
      await waitFor(
        () => got.some((e) => e.type === 'gateway.tool.answered' && (e.data as { callId: string }).callId === callId),
        `answer to ${callId}`,
        30_000,
      );
      return (
        got.find((e) => e.type === 'gateway.tool.answered' && (e.data as { callId: string }).callId === callId)!
          .data as { result: { ok: boolean; value?: unknown; error?: { code: string; message: string } } }
      ).result;
    },
  };
}

const PLUGIN = (file: string) => `
import { appendFileSync } from 'node:fs';
const W = ${JSON.stringify(file)};
const noArgs = { type: 'object', properties: {}, additionalProperties: false };
export default {
  id: 'counter',
  tools: [
    { name: 'count_call', description: 'Count one call in the witness file.', parameters: noArgs,
      execute: () => { appendFileSync(W, 'count_call\\n'); return { counted: true }; } },
    { name: 'owner_reset', description: 'Reset the deployment (owner only).', ownerOnly: true, parameters: noArgs,
      execute: () => { appendFileSync(W, 'owner_reset\\n'); return { reset: true }; } },
    { name: 'deploy_service', description: 'Deploy a service (needs an approver).', parameters: noArgs,
      execute: () => { appendFileSync(W, 'deploy_service\\n'); return { deployed: true }; } },
  ],
};
`;

const callBody = (id: string) => `return await tools.call(${JSON.stringify(id)}, {});`;

async function startPolicy(): Promise<void> {
  const bus = await busAs('policy', { publishTimeoutMs: 10_000 });
  const services = await startRoleServices({ role: 'policy', bus, config, cwd: dir });
  await bus.ready();
  policy = { services, bus };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ts-secured-'));
  auth = join(dir, 'auth');
  witness = join(dir, 'witness.txt');
  shWitness = join(dir, 'sh-ran.txt');
  const out: string[] = [];
  const rc = await natsAuthCommand.run(['--out', auth, '--client', 'billing', '--approver', 'b', '--all', '--json'], {
    stdout: (s) => out.push(s),
    stderr: (s) => out.push(s),
    cwd: dir,
    env: {},
  });
  expect(rc).toBe(0);
  for (const p of (JSON.parse(out.at(-1)!) as { principals: Array<{ name: string; publicKey: string }> }).principals)
    keys[p.name] = p.publicKey;
  server = await startNatsServerWithConfig(join(auth, 'nats-server.conf'));

  writeFileSync(join(dir, 'counter.mjs'), PLUGIN(witness));
  const raw = {
    tools: { toolSearch: { mode: 'code' }, approval: { require: ['deploy_service'], timeoutMs: 4000 } },
    plugins: [join(dir, 'counter.mjs')],
    workspaceDir: dir,
    gateway: noLagAdmission,
    nats: { decisionTimeoutMs: 2500, nkeyFile: seed('gateway') },
    principals: {
      client: { nkey: keys['client'] },
      'client-billing': { nkey: keys['client-billing'], owner: true },
      // The approver user, named as \`nats-auth\` suggests in principals.json5: its answers are recorded by this name.
      approver: { nkey: keys['approver'], approver: true },
      // A second person with the approver right (nats-auth --approver b).
      'approver-b': { nkey: keys['approver-b'], approver: true },
    },
  };
  writeFileSync(join(dir, 'config.json5'), JSON.stringify(raw));
  const parsed = parseConfig(raw, undefined, { cwd: dir });
  if (!parsed.ok) throw new Error(parsed.error.message);
  config = parsed.value.config;

  // The deployment: gateway (with the HTTP front), policy and sandbox roles, each with its own key.
  const gw = await startGateway({ config, cwd: dir, nats: server.url, role: 'gateway', port: 0, env: {} });
  if (!gw.ok) throw new Error(`${gw.error.code}: ${gw.error.message}`);
  gateway = gw.value;
  await (gateway.bus as NatsBus).ready();
  await startPolicy();
  const sbus = await busAs('sandbox');
  sandbox = { bus: sbus, services: await startRoleServices({ role: 'sandbox', bus: sbus, config, cwd: dir }) };
  await sbus.ready();
}, 90_000);

afterAll(async () => {
  for (const o of open.splice(0).reverse()) await o.close().catch(() => undefined);
  await policy?.services.close();
  await sandbox?.services.close();
  await gateway?.close();
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('a secured deployment (toolsearch nats-auth) serves real turns', () => {
  it('runs an HTTP turn end to end in code mode: gateway, policy role and sandbox role each as its own principal', async () => {
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-toolsearch-session': 'http-1' },
      body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: 'count it target=count_call' }] }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
    expect(body.choices[0]?.message.content).toContain('counted');
    expect(ran()).toEqual(['count_call']);
  }, 60_000);

  it("runs a client principal's commands (turn requested, code run through the sandbox role, turn ended)", async () => {
    const client = await busAs('client');
    const s = await clientSession(client, 'cmd-1');
    expect((await s.open({})).ok).toBe(true);
    const r = await s.code(callBody('openclaw:counter:count_call'), 'c1');
    expect(r).toMatchObject({ ok: true });
    expect(JSON.stringify(r.value)).toContain('counted');
    expect(ran()).toEqual(['count_call', 'count_call']);
    await publishSessionEvent(
      client,
      'cmd-1',
      'gateway.turn.ended',
      { requestId: 'r-t1', outcome: 'completed' },
      { turnId: 't1' },
    );
    // Bounded retention: a command (chat messages, arguments) is gone from GATEWAY_COMMANDS once a gateway took it.
    const { nc } = await rawAs('gateway');
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const info = await jsm.streams.info('GATEWAY_COMMANDS');
    expect(info.config.retention).toBe('workqueue');
    expect(info.config.max_age).toBe(3_600_000 * 1_000_000);
    await waitFor(() => gateway.sessionEvents!.stats().processed >= 3, 'the three commands handled');
    let left = Infinity;
    const until = Date.now() + 10_000;
    while (left > 0 && Date.now() < until) {
      left = (await jsm.streams.info('GATEWAY_COMMANDS')).state.messages;
      if (left > 0) await sleep(100);
    }
    expect(left).toBe(0);
  }, 60_000);

  it('runs `toolsearch turn --nats --nats-nkey gateway.nk`: its calls are decided by the policy role', async () => {
    writeFileSync(
      join(dir, 'script.json'),
      JSON.stringify({
        session: { sessionId: 'cli-1' },
        mode: 'tools',
        steps: [{ tool: 'tool_call', args: { id: 'openclaw:counter:count_call', args: {} } }],
      }),
    );
    const out: string[] = [];
    const before = ran().length;
    const rc = await turnCommand.run(
      [
        '--nats',
        server.url,
        '--nats-nkey',
        seed('gateway'),
        '--config',
        join(dir, 'config.json5'),
        '--script',
        join(dir, 'script.json'),
        '--json',
      ],
      { stdout: (l) => out.push(l), stderr: (l) => out.push(l), cwd: dir, env: {} },
    );
    expect(rc, out.join('\n')).toBe(0);
    const last = JSON.parse(out.filter((l) => l.startsWith('{')).at(-1)!) as { results: Array<{ ok: boolean }> };
    expect(last.results).toEqual([expect.objectContaining({ ok: true })]);
    expect(ran().length).toBe(before + 1);
  }, 60_000);

  it('runs `toolsearch mcp --nats --nats-nkey gateway.nk` over stdio: its calls are decided by the policy role', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        resolve('bin/toolsearch.mjs'),
        'mcp',
        '--nats',
        server.url,
        '--nats-nkey',
        seed('gateway'),
        '--config',
        join(dir, 'config.json5'),
      ],
      cwd: dir,
      env: { PATH: process.env['PATH'] ?? '' },
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
    const mcp = new Client({ name: 'secured-mcp-test', version: '1.0.0' });
    await mcp.connect(transport);
    try {
      const before = ran().length;
      const r = (await mcp.callTool({
        name: 'tool_call',
        arguments: { id: 'openclaw:counter:count_call', args: {} },
      })) as { isError?: boolean; content: Array<{ text?: string }> };
      expect(r.isError ?? false, `${JSON.stringify(r)}\n${stderr}`).toBe(false);
      expect(r.content[0]?.text).toContain('counted');
      expect(ran().length).toBe(before + 1);
      expect(stderr).not.toMatch(/SU[A-Z2-7]{56}/); // the seed is never printed
    } finally {
      await mcp.close();
    }
    // The call ran, so the policy role decided it: the mcp process, a gateway principal, may not publish a decision.
  }, 60_000);

  it("runs `serve --role all` with the all principal (nats-auth --all), and refuses it with one role's seed", async () => {
    const refused = await startGateway({
      config: { ...config, nats: { ...config.nats, nkeyFile: seed('gateway') } },
      cwd: dir,
      nats: server.url,
      role: 'all',
      port: 0,
      env: {},
    });
    expect(refused).toMatchObject({ ok: false, error: { code: 'serve.allNeedsAllPrincipal' } });
    const message = (refused as { error: { message: string } }).error.message;
    expect(message).toContain('toolsearch.rpc.code.run');
    expect(message).toContain('nats-auth --out DIR --all');
    expect(message).toContain('serve --role policy --nats-nkey DIR/policy.nk');
    const all = await startGateway({
      config: { ...config, nats: { ...config.nats, nkeyFile: seed('all') } },
      cwd: dir,
      nats: server.url,
      role: 'all',
      port: 0,
      env: {},
    });
    if (!all.ok) throw new Error(`${all.error.code}: ${all.error.message}`);
    try {
      const before = ran().length;
      const res = await fetch(`${all.value.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-toolsearch-session': 'all-1' },
        body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: 'count it target=count_call' }] }),
      });
      expect(res.status).toBe(200);
      expect(JSON.stringify(await res.json())).toContain('counted');
      expect(ran().length).toBe(before + 1);
    } finally {
      await all.value.close();
    }
  }, 90_000);

  it('lets the auditor replay every fact and write nothing', async () => {
    const auditor = await busAs('auditor');
    const events: Envelope[] = [];
    for await (const e of auditor.replay({ sessionId: 'cmd-1' })) events.push(e);
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['turn.started', 'call.requested', 'call.decided', 'call.completed', 'code.settled']),
    );
    const err = await auditor
      .publish(
        makeEnvelope({
          type: 'call.completed',
          sessionId: 'cmd-1',
          turnId: 't1',
          seq: 999,
          at: new Date(),
          causationId: null,
          data: {} as never,
        }),
      )
      .catch((e: unknown) => e);
    expect(isBusError(err, 'bus.permissionDenied')).toBe(true);
    expect(String((err as Error).message)).toContain('Permissions Violation for Publish to "toolsearch.turnseq.');
  }, 30_000);
});

describe('turn leases on the secured deployment', () => {
  it('a gateway member sees another member take its turn over and is refused at its next sync point', async () => {
    const a = await busAs('gateway');
    const b = await busAs('gateway');
    expect(await a.deniedSubscriptions(['toolsearch.turnseq.*.*.lease'])).toEqual([]);
    const ev = (seq: number, type: 'turn.started' | 'search.performed' | 'turn.completed') =>
      makeEnvelope({
        type,
        sessionId: 'lease-1',
        turnId: 't1',
        seq,
        at: new Date(),
        causationId: null,
        data: {} as never,
      });
    await a.publish(ev(1, 'turn.started'));
    await b.publish(ev(2, 'search.performed')); // b takes the turn over at seq 2
    const err = await a.publish(ev(3, 'turn.completed')).catch((e: unknown) => e);
    expect(isBusError(err, 'bus.staleWriter')).toBe(true);
    expect(String((err as Error).message)).toContain('taken over at seq 2');
  }, 30_000);
});

describe('attacks on the secured deployment are refused, and nothing runs', () => {
  it('no credentials: the server refuses the connection (bus.unauthorized, saying which credential to give)', async () => {
    const err = await openNatsBus({ url: server.url, connectTimeoutMs: 3000 }).catch((e: unknown) => e);
    expect(isBusError(err, 'bus.unauthorized')).toBe(true);
    expect((err as Error).message).toMatch(/Authorization Violation.*--nats-nkey FILE/s);
    // A password in the URL is used, and never printed, not even in the nested cause.
    const withPass = await openNatsBus({
      url: server.url.replace('nats://', 'nats://mallory:hunter2secret@'),
      connectTimeoutMs: 3000,
    }).catch((e: unknown) => e);
    expect(isBusError(withPass, 'bus.unauthorized')).toBe(true);
    const text = `${(withPass as Error).message} ${String((withPass as Error).cause)} ${JSON.stringify(withPass)}`;
    expect(text).not.toContain('hunter2secret');
  });

  it('a client cannot start a program through a turn request (request.mcpServerNotAllowed)', async () => {
    const client = await busAs('client');
    const s = await clientSession(client, 'mcp-1');
    const opened = await s.open({ mcpServers: [{ name: 'evil', command: 'sh', args: ['-c', `touch ${shWitness}`] }] });
    expect(opened).toMatchObject({ ok: false, error: { code: 'request.mcpServerNotAllowed' } });
    expect(opened.error!.message).toContain('nothing a request says starts a process');
    await waitFor(() => s.got.some((e) => e.type === 'gateway.event.rejected'), 'the rejection record');
    await sleep(200);
    expect(existsSync(shWitness)).toBe(false);
  }, 30_000);

  it('a client cannot claim owner rights or another identity (principal.notAllowed); a principal with the right can', async () => {
    const client = await busAs('client');
    const s = await clientSession(client, 'own-1');
    const opened = await s.open({ owner: true });
    expect(opened).toMatchObject({ ok: false, error: { code: 'principal.notAllowed' } });
    expect(opened.error!.message).toContain('Principal "client" asked for owner rights but has none');
    const agent = await s.open({ agentId: 'support' }, 't2');
    expect(agent.error!.message).toMatch(/asked for agent "support" but may use only "default"/);
    // Without owner rights the owner-only tool is refused by policy.
    expect((await s.open({}, 't3')).ok).toBe(true);
    const r = await s.code(callBody('openclaw:counter:owner_reset'), 'o1', 't3');
    expect(JSON.stringify(r)).toMatch(/blocked|not found|owner/i);
    // Publishing under another principal's token is refused by the server itself.
    const spoof = await publishSessionEvent(
      client,
      'own-2',
      'gateway.turn.requested',
      { requestId: 'x', owner: true },
      { turnId: 't1', principal: keys['client-billing'] },
    ).catch((e: unknown) => e);
    expect(isBusError(spoof, 'bus.permissionDenied')).toBe(true);
    expect((spoof as Error).message).toContain(
      `Permissions Violation for Publish to "gateway.cmd.${keys['client-billing']}.own-2.turn_requested"`,
    );
    expect(ran()).not.toContain('owner_reset');
    // The billing principal has the owner right: the same request runs for it.
    const billing = await busAs('client-billing');
    const b = await clientSession(billing, 'own-3');
    expect((await b.open({ owner: true })).ok).toBe(true);
    expect(await b.code(callBody('openclaw:counter:owner_reset'), 'b1')).toMatchObject({ ok: true });
    expect(ran()).toContain('owner_reset');
    // ... and it cannot continue the client's session: the refusal is answered to billing, the session's owner
    // hears nothing of it.
    const stolen = await clientSession(billing, 'own-1');
    const r2 = await publishSessionEvent(
      billing,
      'own-1',
      'gateway.tool.invoked',
      { requestId: 'r-t3', callId: 'steal', tool: 'tool_search_code', args: { code: 'return 1' } },
      { turnId: 't3' },
    );
    expect(r2.ok).toBe(true);
    await waitFor(
      () =>
        stolen.got.some(
          (e) => e.type === 'gateway.event.rejected' && (e.data as { code: string }).code === 'gateway.sessionNotYours',
        ),
      'sessionNotYours',
    );
    expect(s.got.some((e) => JSON.stringify(e.data).includes('steal'))).toBe(false);
  }, 60_000);

  it('a client, a sandbox or the gateway principal cannot approve a call, nor can a forged approval_settled record; an approver can', async () => {
    const client = await busAs('client');
    const attacker = await rawAs('client');
    const sandboxAttacker = await rawAs('sandbox');
    const gatewayAttacker = await rawAs('gateway');
    const policyAttacker = await rawAs('policy');
    const s = await clientSession(client, 'appr-1');
    expect((await s.open({})).ok).toBe(true);
    // Well-formed answers, as a real approver would send them, for the approval the gateway asks for.
    const asked: Envelope[] = [];
    const auditor = await busAs('auditor');
    auditor.subscribe('toolsearch.evt.appr-1.*.approval_requested', (e) => asked.push(e));
    await auditor.ready();
    const answerTo = (type: 'approval.resolved' | 'approval.settled', e: Envelope, id: string) => {
      const d = e.data as { callId: string; approvalId: string; argsDigest: string };
      return makeEnvelope({
        type,
        id,
        sessionId: e.sessionId,
        turnId: e.turnId,
        seq: e.seq + 1,
        at: new Date(),
        causationId: e.id,
        // The right approval, call and argument digest: only the server's refusal stops it.
        data: { callId: d.callId, approvalId: d.approvalId, argsDigest: d.argsDigest, approved: true, by: 'callback' },
      });
    };
    let n = 0;
    const forge = () => {
      for (const e of asked) {
        // A compromised neighbour holding gateway.nk may not answer either (no `--gateway-records-answers`).
        for (const [a, own] of [
          [attacker, keys['client']],
          [sandboxAttacker, keys['sandbox']],
          [gatewayAttacker, keys['gateway']],
          [policyAttacker, keys['policy']],
        ] as const) {
          // The gateway's record subject, an approver's subject under its own key, and one under an approver's key.
          for (const subject of [
            'toolsearch.evt.appr-1.t1.approval_resolved',
            `toolsearch.evt.appr-1.t1.approval_resolved.${own}`,
            `toolsearch.evt.appr-1.t1.approval_resolved.${keys['approver']}`,
          ]) {
            const forged = JSON.stringify(answerTo('approval.resolved', e, `forged-${n++}`));
            a.nc.publish(subject, forged);
            void jetstream(a.nc)
              .publish(subject, forged)
              .catch(() => undefined);
          }
        }
        // The gateway role may publish the gateway's own record of a wait; no turn takes it for an answer.
        const settled = JSON.stringify(answerTo('approval.settled', e, `forged-${n++}`));
        void jetstream(gatewayAttacker.nc)
          .publish('toolsearch.evt.appr-1.t1.approval_settled', settled)
          .catch(() => undefined);
      }
    };
    const timer = setInterval(forge, 100);
    const r = await s.code(callBody('openclaw:counter:deploy_service'), 'a1').finally(() => clearInterval(timer));
    expect(asked.length).toBeGreaterThan(0);
    expect(JSON.stringify(r)).toMatch(/approv/i);
    expect(ran()).not.toContain('deploy_service');
    for (const [a, own] of [
      [attacker, keys['client']],
      [sandboxAttacker, keys['sandbox']],
      [gatewayAttacker, keys['gateway']],
      [policyAttacker, keys['policy']],
    ] as const) {
      expect(a.errors).toContain('Permissions Violation for Publish to "toolsearch.evt.appr-1.t1.approval_resolved"');
      expect(a.errors).toContain(
        `Permissions Violation for Publish to "toolsearch.evt.appr-1.t1.approval_resolved.${own}"`,
      );
      expect(a.errors).toContain(
        `Permissions Violation for Publish to "toolsearch.evt.appr-1.t1.approval_resolved.${keys['approver']}"`,
      );
    }

    // The approver principal reads approval requests and answers them, under its own key's token.
    const approver = await busAs('approver', { subjectOf: approverSubjectOf(keys['approver']!) });
    approver.subscribe('toolsearch.evt.*.*.approval_requested', (e) => {
      const d = e.data as { callId: string; approvalId: string; argsDigest: string };
      if (answerOnBus === false) return;
      void approver
        .publish(
          makeEnvelope({
            type: 'approval.resolved',
            sessionId: e.sessionId,
            turnId: e.turnId,
            seq: e.seq + 1,
            at: new Date(),
            causationId: e.id,
            data: { callId: d.callId, approvalId: d.approvalId, argsDigest: d.argsDigest, approved: true, by: 'bus' },
          }),
        )
        .catch(() => undefined);
    });
    await approver.ready();
    expect(await s.code(callBody('openclaw:counter:deploy_service'), 'a2')).toMatchObject({ ok: true });
    expect(ran()).toContain('deploy_service');
    answerOnBus = false;
  }, 60_000);

  it('an approver lists the pending call with its arguments over NATS and answers it (toolsearch approvals / approve --nats)', async () => {
    const client = await busAs('client');
    const s = await clientSession(client, 'appr-cli');
    expect((await s.open({})).ok).toBe(true);
    const as = ['--nats', server.url, '--nats-nkey', seed('approver')];
    const cli = async (cmd: typeof approvalsCommand, argv: string[]) => {
      const out: string[] = [];
      const code = await cmd.run(argv, { stdout: (x) => out.push(x), stderr: (x) => out.push(x), cwd: dir, env: {} });
      return { code, out, last: () => JSON.parse(out.at(-1) ?? 'null') };
    };
    const before = ran().filter((r) => r === 'deploy_service').length;
    const call = s.code(callBody('openclaw:counter:deploy_service'), 'a3');
    let pending: any[] = [];
    const until = Date.now() + 3000;
    while (pending.length === 0 && Date.now() < until) {
      const listed = await cli(approvalsCommand, [...as, '--json']);
      expect(listed.code).toBe(0);
      pending = listed.last().approvals;
    }
    expect(pending[0]).toMatchObject({
      tool: { id: 'openclaw:counter:deploy_service' },
      sessionId: 'appr-cli',
      args: {},
    });
    // A client principal may not ask the gateways for approvals.
    const asClient = await cli(approvalsCommand, ['--nats', server.url, '--nats-nkey', seed('client'), '--json']);
    expect(asClient.code).toBe(1);
    // The gateway's desk may not record an answer on this server: its HTTP route says so (never a silent
    // success), and the call goes on waiting.
    const viaHttp = await fetch(`${gateway.url}/v1/approvals/${encodeURIComponent(pending[0].approvalId)}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gateway.approverToken!.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ approved: true }),
    });
    expect(viaHttp.status).toBe(403);
    const refused = (await viaHttp.json()) as { error: { code: string; message: string } };
    expect(refused.error.code).toBe('approval.recordRefused');
    expect(refused.error.message).toContain(
      `toolsearch approve ${pending[0].approvalId} --nats URL --nats-nkey approver.nk`,
    );
    expect(refused.error.message).toContain('TOOLSEARCH_GATEWAY_RECORDS_ANSWERS=1');
    expect(refused.error.message).toContain('--gateway-records-answers');
    expect(gateway.approvals.get(pending[0].approvalId)).toBeDefined();
    expect(ran().filter((r) => r === 'deploy_service').length).toBe(before);
    const yes = await cli(approveCommand, [...as, pending[0].approvalId, '--reason', 'over nats', '--json']);
    expect(yes.code).toBe(0);
    expect(await call).toMatchObject({ ok: true });
    expect(ran().filter((r) => r === 'deploy_service').length).toBe(before + 1);

    // Another call, denied over NATS: blocked, not run; the record says the approver answered via nats.
    const second = s.code(callBody('openclaw:counter:deploy_service'), 'a4');
    let next: any[] = [];
    const until2 = Date.now() + 3000;
    while (next.length === 0 && Date.now() < until2)
      next = (await cli(approvalsCommand, [...as, '--json'])).last().approvals;
    // The approver claims another name (its seed file named alice.nk): recorded as the principal the server pinned
    // (its nkey in the answer's subject), the claimed name a note only.
    copyFileSync(seed('approver'), join(auth, 'alice.nk'));
    const asAlice = ['--nats', server.url, '--nats-nkey', join(auth, 'alice.nk')];
    const no = await cli(approveCommand, [...asAlice, next[0].approvalId, '--deny', '--reason', 'no', '--json']);
    expect(no.code).toBe(0);
    expect(JSON.stringify(await second)).toMatch(/approvalDenied/);
    expect(ran().filter((r) => r === 'deploy_service').length).toBe(before + 1);
    // The first answer again: settled already, no longer pending, refused.
    const replay = await cli(approveCommand, [...as, pending[0].approvalId, '--json']);
    expect(replay.code).toBe(1);
    expect(replay.out.join('\n')).toContain('approval.unknown');
    // The approver published its answers itself, recorded with its principal's name via nats.
    // An auditor with the deployment's principals names the approver of each key.
    const auditor = await busAs('auditor', { approverName: approverNames(config.principals) });
    const facts: Envelope[] = [];
    for await (const e of auditor.replay({ sessionId: 'appr-cli' })) facts.push(e);
    const answers = facts.filter((e) => e.type === 'approval.resolved').map((e) => e.data as Record<string, unknown>);
    expect(answers).toEqual([
      expect.objectContaining({ approvalId: pending[0].approvalId, approved: true, by: 'approver', channel: 'nats' }),
      expect.objectContaining({
        approvalId: next[0].approvalId,
        approved: false,
        by: 'approver',
        claimedBy: 'alice',
        channel: 'nats',
      }),
    ]);
    expect(answers[0]).not.toHaveProperty('claimedBy');
    // Nor can it send an answer under another principal's key, and the gateway principal sends none at all.
    // Nor may an approver or a client hand a gateway member an answer as if another member's front had taken it.
    for (const [who, subject] of [
      ['approver', `toolsearch.rpc.approvals.answer.${keys['client-billing']}.any-member`],
      ['gateway', `toolsearch.rpc.approvals.answer.${keys['gateway']}.any-member`],
      ['approver', 'toolsearch.rpc.approvals.forward.any-member'],
      ['client', 'toolsearch.rpc.approvals.forward.any-member'],
    ] as const) {
      const { nc, errors } = await rawAs(who);
      nc.publish(subject, JSON.stringify({ approvalId: 'x', approved: true }));
      await nc.flush();
      await waitFor(() => errors.some((e) => e.includes(`Permissions Violation for Publish to "${subject}"`)), subject);
    }
    // The gateway's own record of the wait names the pinned principal too.
    expect(gateway.approvals.recent().find((r) => r.approvalId === next[0].approvalId)).toMatchObject({
      by: 'approver',
      approved: false,
    });
  }, 60_000);

  it("an approver's answer names the principal of the key it was published under, whatever its body says", async () => {
    const client = await busAs('client');
    const s = await clientSession(client, 'appr-claim');
    expect((await s.open({})).ok).toBe(true);
    const asked: Envelope[] = [];
    const watcher = await busAs('auditor');
    watcher.subscribe('toolsearch.evt.appr-claim.*.approval_requested', (e) => asked.push(e));
    await watcher.ready();
    // Approver A (approver.nk) answers on the bus itself and says it is approver B.
    const a = await busAs('approver', { subjectOf: approverSubjectOf(keys['approver']!) });
    const before = ran().filter((r) => r === 'deploy_service').length;
    const call = s.code(callBody('openclaw:counter:deploy_service'), 'claim-1');
    await waitFor(() => asked.length > 0, 'the approval_requested of appr-claim');
    const e = asked[0]!;
    const d = e.data as { callId: string; approvalId: string; argsDigest: string };
    await a.publish(
      makeEnvelope({
        type: 'approval.resolved',
        sessionId: e.sessionId,
        turnId: e.turnId,
        seq: e.seq + 1,
        at: new Date(),
        causationId: e.id,
        data: { ...d, approved: true, by: 'approver-b', channel: 'nats', reason: 'signed as b' },
      }),
    );
    expect(await call).toMatchObject({ ok: true });
    expect(ran().filter((r) => r === 'deploy_service').length).toBe(before + 1);
    // The gateway's record names A, the principal whose key the server pinned in the fact's subject.
    expect(gateway.approvals.recent().find((r) => r.approvalId === d.approvalId)).toMatchObject({
      by: 'approver',
      approved: true,
    });
    const replayed = async (bus: NatsBus) => {
      const out: Envelope[] = [];
      for await (const x of bus.replay({ sessionId: 'appr-claim' })) out.push(x);
      return out;
    };
    // The gateway's own replay (its turns' fold, the page's session log) and an auditor with the deployment's
    // principals: A, the claimed name only a note. The audit report says the same.
    for (const facts of [
      await replayed(gateway.bus as NatsBus),
      await replayed(await busAs('auditor', { approverName: approverNames(config.principals) })),
    ]) {
      expect(facts.filter((x) => x.type === 'approval.resolved').map((x) => x.data)).toEqual([
        expect.objectContaining({ approvalId: d.approvalId, approved: true, by: 'approver', claimedBy: 'approver-b' }),
      ]);
      const report = auditReport(facts, 'appr-claim');
      expect(report.detail.calls.find((c) => c.callId === d.callId)?.approval).toMatchObject({
        status: 'approved',
        by: 'approver',
      });
    }
    // An auditor without the principals (toolsearch audit reads no config) names A by its key, never B.
    const plain = await replayed(await busAs('auditor'));
    expect(plain.filter((x) => x.type === 'approval.resolved').map((x) => x.data)).toEqual([
      expect.objectContaining({ by: `nkey:${keys['approver']}`, claimedBy: 'approver-b' }),
    ]);
  }, 60_000);

  it("an approver cannot answer under another approver's key or on the gateway's record subject: refused, nothing runs", async () => {
    const client = await busAs('client');
    const s = await clientSession(client, 'appr-steal');
    expect((await s.open({})).ok).toBe(true);
    const asked: Envelope[] = [];
    const watcher = await busAs('auditor');
    watcher.subscribe('toolsearch.evt.appr-steal.*.approval_requested', (e) => asked.push(e));
    await watcher.ready();
    const { nc, errors } = await rawAs('approver');
    const asB = `toolsearch.evt.appr-steal.t1.approval_resolved.${keys['approver-b']}`;
    const plainSubject = 'toolsearch.evt.appr-steal.t1.approval_resolved';
    const before = ran().filter((r) => r === 'deploy_service').length;
    let n = 0;
    const forge = () => {
      for (const e of asked) {
        const d = e.data as { callId: string; approvalId: string; argsDigest: string };
        for (const subject of [asB, plainSubject]) {
          const forged = JSON.stringify(
            makeEnvelope({
              type: 'approval.resolved',
              id: `steal-${n++}`,
              sessionId: e.sessionId,
              turnId: e.turnId,
              seq: e.seq + 1,
              at: new Date(),
              causationId: e.id,
              data: { ...d, approved: true, by: 'approver-b', channel: 'nats' },
            }),
          );
          nc.publish(subject, forged);
          void jetstream(nc)
            .publish(subject, forged)
            .catch(() => undefined);
        }
      }
    };
    const timer = setInterval(forge, 100);
    const r = await s.code(callBody('openclaw:counter:deploy_service'), 'steal-1').finally(() => clearInterval(timer));
    expect(asked.length).toBeGreaterThan(0);
    // No answer counted: the approval timed out and the call was blocked, never run.
    expect(JSON.stringify(r)).toMatch(/approv/i);
    expect(ran().filter((x) => x === 'deploy_service').length).toBe(before);
    expect(errors).toContain(`Permissions Violation for Publish to "${asB}"`);
    expect(errors).toContain(`Permissions Violation for Publish to "${plainSubject}"`);
    const facts: Envelope[] = [];
    for await (const x of (await busAs('auditor')).replay({ sessionId: 'appr-steal' })) facts.push(x);
    expect(facts.filter((x) => x.type === 'approval.resolved')).toEqual([]);
    expect(facts.some((x) => x.type === 'call.started')).toBe(false);
  }, 60_000);

  it('nobody but a sandbox receives code runs, and a client cannot read, consume, purge or write the streams', async () => {
    const { nc, errors } = await rawAs('client');
    const received: string[] = [];
    for (const subject of [
      'toolsearch.rpc.code.run',
      'toolsearch.evt.>',
      'gateway.cmd.>',
      'gateway.session.>',
      'toolsearch.rpc.bridge.*',
    ]) {
      nc.subscribe(subject, {
        callback: (err, m) => {
          if (err === null) received.push(m.subject);
        },
      });
    }
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const refused = async (what: string, op: () => Promise<unknown>) => {
      const e = await op().then(
        () => undefined,
        (x: unknown) => x,
      );
      expect(e, what).toBeInstanceOf(Error);
      expect((e as Error).message, what).toContain('Permissions Violation for Publish to "$JS.API.');
    };
    await refused('purge', () => jsm.streams.purge('TOOLSEARCH_EVENTS'));
    await refused('delete', () => jsm.streams.delete('GATEWAY_SESSIONS'));
    await refused('consumer on facts', () =>
      jsm.consumers.add('TOOLSEARCH_EVENTS', { name: 'spy', filter_subject: 'toolsearch.evt.>' }),
    );
    await refused('kv bucket', () => jsm.streams.add({ name: 'KV_toolsearch', subjects: ['$KV.toolsearch.>'] }));
    nc.publish('$KV.toolsearch.lease', 'mine');
    nc.publish('toolsearch.evt.x.y.call_completed', '{}');
    nc.publish('gateway.session.x.turn_opened', '{}');
    await nc.flush();
    // A code run still goes to the real sandbox role; the client saw none of it.
    const client = await busAs('client');
    const s = await clientSession(client, 'run-1');
    expect((await s.open({})).ok).toBe(true);
    expect(await s.code('return 6 * 7;', 'r1')).toMatchObject({ ok: true });
    await waitFor(() => errors.length >= 8, 'every refusal reported');
    for (const subject of [
      'toolsearch.rpc.code.run',
      'toolsearch.evt.>',
      'gateway.cmd.>',
      'gateway.session.>',
      'toolsearch.rpc.bridge.*',
    ]) {
      expect(errors).toContain(`Permissions Violation for Subscription to "${subject}"`);
    }
    expect(errors).toContain('Permissions Violation for Publish to "$KV.toolsearch.lease"');
    expect(errors).toContain('Permissions Violation for Publish to "toolsearch.evt.x.y.call_completed"');
    expect(received).toEqual([]);
  }, 60_000);

  it('a sandbox cannot publish facts, answers or commands', async () => {
    const { nc, errors } = await rawAs('sandbox');
    for (const subject of [
      'toolsearch.evt.s.t.call_decided',
      'toolsearch.evt.s.t.call_completed',
      'gateway.session.s.turn_opened',
      `gateway.cmd.${keys['sandbox']}.s.turn_requested`,
    ])
      nc.publish(subject, '{}');
    nc.subscribe('toolsearch.evt.>');
    await nc.flush();
    await waitFor(() => errors.length >= 5, 'the refusals');
    expect(errors).toEqual(
      expect.arrayContaining([
        'Permissions Violation for Publish to "toolsearch.evt.s.t.call_decided"',
        'Permissions Violation for Publish to "toolsearch.evt.s.t.call_completed"',
        'Permissions Violation for Subscription to "toolsearch.evt.>"',
      ]),
    );
  });

  it("a client reads only the answers to its own commands, never another client's", async () => {
    const spy = await rawAs('client');
    const seen: string[] = [];
    const record = (err: Error | null, m: { subject: string }) => {
      if (err === null) seen.push(m.subject);
    };
    for (const subject of [
      `gateway.session.*.turn_opened.${keys['client-billing']}`,
      'gateway.session.*.turn_opened',
      'gateway.session.*.*.*',
      'gateway.session.>',
    ])
      spy.nc.subscribe(subject, { callback: record });
    // Its own answers it may read.
    spy.nc.subscribe(`gateway.session.*.*.${keys['client']}`, { callback: record });
    await spy.nc.flush();
    const billing = await busAs('client-billing');
    const b = await clientSession(billing, 'secret-1');
    expect((await b.open({ messages: [{ role: 'user', content: 'the billing secret' }] })).ok).toBe(true);
    expect(await b.code('return "billing-only-value";', 'bs1')).toMatchObject({ ok: true });
    await waitFor(() => spy.errors.length >= 4, 'the four refusals');
    for (const subject of [
      `gateway.session.*.turn_opened.${keys['client-billing']}`,
      'gateway.session.*.turn_opened',
      'gateway.session.*.*.*',
      'gateway.session.>',
    ])
      expect(spy.errors).toContain(`Permissions Violation for Subscription to "${subject}"`);
    expect(seen.filter((x) => x.includes('secret-1'))).toEqual([]);
    // ... while its own commands are answered to it.
    const own = await busAs('client');
    const s = await clientSession(own, 'mine-1');
    expect((await s.open({})).ok).toBe(true);
    await waitFor(() => seen.some((x) => x.startsWith('gateway.session.mine-1.turn_opened.')), 'its own answer');
  }, 60_000);

  it('with the policy role down, a forged decision does not make a call run: no enforcer = blocked', async () => {
    await policy!.services.close();
    await policy!.bus.close();
    policy = undefined;
    const client = await busAs('client');
    const attacker = await rawAs('sandbox');
    const s = await clientSession(client, 'dec-1');
    expect((await s.open({})).ok).toBe(true);
    const timer = setInterval(
      () => attacker.nc.publish('toolsearch.evt.dec-1.t1.call_decided', JSON.stringify({ decision: 'allowed' })),
      100,
    );
    const before = ran().length;
    const r = await s.code(callBody('openclaw:counter:count_call'), 'd1').finally(() => clearInterval(timer));
    expect(JSON.stringify(r)).toContain('no policy enforcer answered');
    expect(ran().length).toBe(before);
    expect(attacker.errors).toContain('Permissions Violation for Publish to "toolsearch.evt.dec-1.t1.call_decided"');
    await startPolicy();
  }, 60_000);
});
