import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { createUser, fromSeed } from '@nats-io/nkeys';
import { authorizationBlock, natsServerConfig, NATS_ROLES, type NatsPrincipalKey } from '../../bus/nats/index.js';
import { parseCommandArgs, str, strs } from '../args.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE, type CliIo, type Command } from '../io.js';
import { NATS_AUTH_USAGE } from '../usage.js';

const CLIENT_NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$/;

/** The key of one principal: the seed in `file` when it holds one, else a new one written there (0600). */
function keyOf(file: string): { publicKey: string; created: boolean } {
  if (existsSync(file)) {
    const seed = /\bSU[A-Z2-7]{56}\b/.exec(readFileSync(file, 'utf8'))?.[0];
    if (seed === undefined)
      throw new Error(`${file} exists but holds no user nkey seed: remove it to have a new key written`);
    const kp = fromSeed(new TextEncoder().encode(seed));
    const publicKey = kp.getPublicKey();
    kp.clear();
    return { publicKey, created: false };
  }
  const kp = createUser();
  const seed = new TextDecoder().decode(kp.getSeed());
  const publicKey = kp.getPublicKey();
  kp.clear();
  writeFileSync(file, `${seed}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return { publicKey, created: true };
}

const ROUTE = /^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9A-Fa-f:.]+\]:\d{1,5}$/;

/** The route password in `file` when it holds one, else a new random one written there (0600). */
function routePasswordOf(file: string): string {
  if (existsSync(file)) {
    const kept = readFileSync(file, 'utf8').trim();
    if (/^[A-Za-z0-9_-]{32,}$/.test(kept)) return kept;
    throw new Error(`${file} exists but holds no route password: remove it to have a new one written`);
  }
  const pw = randomBytes(32).toString('base64url');
  writeFileSync(file, `${pw}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return pw;
}

/**
 * The lines to include inside the `cluster { }` block of every node: the routes' own user and password (nats-server
 * 2.9 authenticates routes by user/password or TLS, not nkeys) and the routes to the other nodes with them. Pure: no I/O.
 */
export function clusterRoutesConfig(routes: readonly string[], password: string): string {
  return [
    '# Written by `toolsearch nats-auth --route`: include it inside the cluster block of every node. A route must',
    '# authenticate with this user and password; the other nodes are reached with them.',
    `authorization { user: "route", password: ${JSON.stringify(password)} }`,
    `routes: [`,
    ...routes.map((r) => `  ${JSON.stringify(`nats-route://route:${password}@${r}`)}`),
    ']',
    '',
  ].join('\n');
}

/** `toolsearch nats-auth`: principals, permissions and seed files of a secured deployment. */
export const natsAuthCommand: Command = {
  name: 'nats-auth',
  summary:
    'write a secured nats-server config and one nkey seed per role (gateway, policy, sandbox, client, approver, auditor)',
  usage: NATS_AUTH_USAGE,
  async run(argv: string[], io: CliIo): Promise<number> {
    const parsed = parseCommandArgs(
      argv,
      {
        out: { type: 'string' },
        client: { type: 'string', multiple: true },
        approver: { type: 'string', multiple: true },
        all: { type: 'boolean' },
        'gateway-records-answers': { type: 'boolean' },
        route: { type: 'string', multiple: true },
        port: { type: 'string' },
        'stream-prefix': { type: 'string' },
        json: { type: 'boolean' },
      },
      { positionals: false, command: 'nats-auth' },
    );
    if (!parsed.ok) {
      io.stderr(`${parsed.error.message}\n\n${NATS_AUTH_USAGE}`);
      return EXIT_USAGE;
    }
    const v = parsed.value.values;
    const out = str(v['out']);
    if (out === undefined) {
      io.stderr(`nats-auth: give --out DIR (where the server config and the seed files go).\n\n${NATS_AUTH_USAGE}`);
      return EXIT_USAGE;
    }
    const clients = strs(v['client']);
    const approvers = strs(v['approver']);
    for (const [flag, names, example] of [
      ['client', clients, 'billing'],
      ['approver', approvers, 'alice'],
    ] as const) {
      const bad = names.find((c) => !CLIENT_NAME.test(c));
      if (bad === undefined) continue;
      io.stderr(
        `nats-auth: --${flag} "${bad}" is not a principal name: use 1 to 64 letters, digits, _ and - (e.g. --${flag} ${example}).`,
      );
      return EXIT_USAGE;
    }
    const routes = strs(v['route']);
    const badRoute = routes.find((r) => !ROUTE.test(r));
    if (badRoute !== undefined) {
      io.stderr(
        `nats-auth: --route "${badRoute}" is not HOST:PORT: give each cluster node's route address (e.g. --route 10.0.0.1:6222).`,
      );
      return EXIT_USAGE;
    }
    const portText = str(v['port']);
    const port = portText === undefined ? undefined : Number(portText);
    if (port !== undefined && !(Number.isInteger(port) && port > 0 && port <= 65535)) {
      io.stderr(`nats-auth: --port "${portText}" is not a port number: give an integer from 1 to 65535.`);
      return EXIT_USAGE;
    }
    const prefix = str(v['stream-prefix']) ?? '';
    // Opt-in: the gateway principal may record approvers' answers (HTTP, page, MCP approvals), and so approve.
    const gatewayRecordsAnswers = v['gateway-records-answers'] === true;
    const dir = resolve(io.cwd, out);
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const principals: Array<NatsPrincipalKey & { seedFile: string; created: boolean }> = [];
      const add = (name: string, role: NatsPrincipalKey['role']) => {
        const seedFile = join(dir, `${name}.nk`);
        const k = keyOf(seedFile);
        principals.push({ name, role, publicKey: k.publicKey, seedFile, created: k.created });
      };
      for (const role of NATS_ROLES) add(role, role);
      for (const c of [...new Set(clients)]) add(`client-${c}`, 'client');
      // One approver principal per person: an approver's answer names the principal of the key it was published under.
      for (const a of [...new Set(approvers)]) add(`approver-${a}`, 'approver');
      // Only when asked: one principal with every right of the gateway, policy and sandbox roles (serve --role all).
      if (v['all'] === true) add('all', 'all');
      writeFileSync(
        join(dir, 'nats-server.conf'),
        natsServerConfig(principals, {
          ...(port === undefined ? {} : { port }),
          streamPrefix: prefix,
          gatewayRecordsAnswers,
        }),
        { mode: 0o644 },
      );
      writeFileSync(
        join(dir, 'authorization.conf'),
        authorizationBlock(principals, prefix, { gatewayRecordsAnswers }),
        { mode: 0o644 },
      );
      if (routes.length > 0) {
        const pw = routePasswordOf(join(dir, 'route.pw'));
        writeFileSync(join(dir, 'cluster-routes.conf'), clusterRoutesConfig(routes, pw), { mode: 0o600 });
        chmodSync(join(dir, 'cluster-routes.conf'), 0o600);
      }
      const snippet = {
        principals: Object.fromEntries(
          principals
            .filter((p) => p.role === 'client' || p.role === 'approver')
            .map((p) => [
              p.name,
              {
                nkey: p.publicKey,
                agents: ['default'],
                profiles: ['default'],
                sandboxes: ['default'],
                owner: false,
                ...(p.role === 'approver' ? { approver: true } : {}),
              },
            ]),
        ),
      };
      writeFileSync(
        join(dir, 'principals.json5'),
        `// Principals of ${dir}: merge into the gateway's config and widen each as needed.\n${JSON.stringify(snippet, null, 2)}\n`,
      );
      for (const p of principals)
        io.stdout(
          `${p.role.padEnd(9)} ${p.name.padEnd(20)} ${p.publicKey}  ${p.seedFile}${p.created ? '' : ' (kept)'}`,
        );
      io.stdout(
        `nats-server config: ${join(dir, 'nats-server.conf')} (start: nats-server -c ${join(dir, 'nats-server.conf')} -sd STORE_DIR)`,
      );
      if (routes.length > 0)
        io.stdout(
          `cluster routes: ${join(dir, 'cluster-routes.conf')} (include it inside the cluster block of each node; 0600, holds the route password)`,
        );
      if (v['json'] === true) {
        io.stdout(
          JSON.stringify({
            dir,
            principals: principals.map(({ name, role, publicKey, seedFile }) => ({ name, role, publicKey, seedFile })),
          }),
        );
      }
      return EXIT_OK;
    } catch (e) {
      io.stderr(`nats-auth.writeFailed: cannot write ${dir}: ${e instanceof Error ? e.message : String(e)}`);
      return EXIT_FAILED;
    }
  },
};
