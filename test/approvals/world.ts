import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/index.js';
import { startGateway, type RunningGateway } from '../../src/app/index.js';
import type { Envelope } from '../../src/bus/index.js';
import { noLagAdmission } from '../support/gateway.js';

/** A gateway whose plugin tool `deploy_service` needs approval and counts every run in a witness file. */
export interface ApprovalWorld {
  dir: string;
  gw: RunningGateway;
  /** How many times the counting tool ran, and with which services. */
  runs(): string[];
  /** Starts a chat turn that calls deploy_service (not awaited: it waits for an approver). */
  chat(sessionId: string, headers?: Record<string, string>, target?: string): Promise<Response>;
  /** Polls GET /v1/approvals until `n` are pending (bounded). */
  pending(n: number, headers?: Record<string, string>): Promise<any[]>;
  events(sessionId: string): Promise<Envelope[]>;
  close(): Promise<void>;
}

export const APPROVER_KEY = 'tsk_approver-key-for-tests-0123456789';
export const CLIENT_KEY = 'tsk_client-key-for-tests-0123456789';

/** A plugin whose one tool appends each run to `witness`. Its `password` argument is secret (writeOnly). */
export function countingPlugin(witness: string): string {
  return `import { appendFileSync } from 'node:fs';
export default {
  id: 'ops',
  tools: [
    {
      name: 'deploy_service',
      description: 'Deploy a service to production (counts each run)',
      parameters: {
        type: 'object',
        properties: { service: { type: 'string' }, password: { type: 'string', writeOnly: true } },
        required: ['service', 'password'],
      },
      async execute(args) {
        appendFileSync(${JSON.stringify(witness)}, String(args.service) + '\\n');
        return { deployed: args.service };
      },
    },
  ],
};
`;
}

export async function approvalWorld(
  opts: {
    keys?: boolean;
    timeoutMs?: number;
    extra?: Record<string, unknown>;
    catalogs?: unknown[];
    /** Plain HTTP beyond loopback (a wildcard listen host). */
    insecureHttp?: boolean;
    /** A NATS server to run on (one gateway member of it) instead of the embedded bus. */
    nats?: string;
    /** False: a member that takes no session commands (so it holds no session ownership). */
    sessionEvents?: boolean;
  } = {},
): Promise<ApprovalWorld> {
  const dir = await mkdtemp(join(tmpdir(), 'toolsearch-approvals-'));
  const witness = join(dir, 'runs.txt');
  const plugin = join(dir, 'ops-plugin.mjs');
  await writeFile(plugin, countingPlugin(witness));
  const { hashApiKey } = await import('../../src/gateway/index.js');
  const parsed = parseConfig(
    {
      plugins: [plugin],
      gateway: noLagAdmission,
      tools: { approval: { require: ['deploy_*'], timeoutMs: opts.timeoutMs ?? 20_000 } },
      ...(opts.keys === true
        ? {
            principals: {
              alice: { keySha256: hashApiKey(APPROVER_KEY), approver: true },
              bob: { keySha256: hashApiKey(CLIENT_KEY) },
            },
          }
        : {}),
      ...(opts.extra ?? {}),
    },
    undefined,
    { cwd: dir },
  );
  if (!parsed.ok) throw new Error(parsed.error.message);
  const catalogPaths: string[] = [];
  for (const [i, snapshot] of (opts.catalogs ?? []).entries()) {
    const file = join(dir, `catalog-${i}.json`);
    await writeFile(file, JSON.stringify(snapshot));
    catalogPaths.push(file);
  }
  const started = await startGateway({
    config: parsed.value.config,
    cwd: dir,
    port: 0,
    catalogPaths,
    ...(opts.insecureHttp === true ? { insecureHttp: true } : {}),
    ...(opts.nats === undefined ? {} : { nats: opts.nats, env: {} }),
    ...(opts.sessionEvents === undefined ? {} : { sessionEvents: opts.sessionEvents }),
  });
  if (!started.ok) throw new Error(started.error.message);
  const gw = started.value;
  const token = gw.approverToken!.token;
  return {
    dir,
    gw,
    runs: () => (existsSync(witness) ? readFileSync(witness, 'utf8').split('\n').filter(Boolean) : []),
    chat: (sessionId, headers = {}, target = 'deploy_service') =>
      fetch(`${gw.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-toolsearch-session': sessionId, ...headers },
        body: JSON.stringify({
          model: 'any',
          messages: [{ role: 'user', content: `Do it. target=${target}` }],
        }),
      }),
    async pending(n, headers = { authorization: `Bearer ${token}` }) {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const res = await fetch(`${gw.url}/v1/approvals`, { headers });
        const body = (await res.json()) as { approvals: any[] };
        if (body.approvals.length >= n) return body.approvals;
        if (Date.now() > deadline) throw new Error(`expected ${n} pending approvals, saw ${body.approvals.length}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async events(sessionId) {
      const out: Envelope[] = [];
      for await (const e of gw.bus.replay({ sessionId })) out.push(e);
      return out;
    },
    async close() {
      await gw.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
