import { randomUUID } from 'node:crypto';
import type { EventBus } from '../bus/index.js';
import type { ResolvedConfig } from '../config/index.js';
import { startPolicyEnforcer, type PolicyEnforcer } from '../policy/index.js';
import {
  createRemoteSandbox,
  createSandbox,
  startSandboxRunner,
  type RemoteSandboxOptions,
  type Sandbox,
  type SandboxRunner,
} from '../sandbox/index.js';
import { startCallLearning } from '../search/index.js';
import { createEngine, type Engine, type EngineOptions } from '../turn/index.js';
import { startSessionEventConsumer, type SessionEventConsumer, type SessionOwnership } from '../gateway/index.js';
import { openSessionOwners, type NatsBus } from '../bus/nats/index.js';
import { fencedBus, type Fence } from './fencedBus.js';

export type Role = 'all' | 'gateway' | 'policy' | 'sandbox';
export const ROLES: readonly Role[] = ['all', 'gateway', 'policy', 'sandbox'];

/** Pure: no I/O. */
export const isRole = (v: unknown): v is Role => typeof v === 'string' && (ROLES as readonly string[]).includes(v);

export interface RoleServicesOptions {
  role: Role;
  bus: EventBus;
  config: ResolvedConfig;
  /** Where relative paths resolve (kept for callers that load sources; the roles themselves read no files). */
  cwd: string;
  /**
   * What the engine needs beyond bus and config (gateway and all): static sources, includeConfigMcp, telemetry,
   * mode... The sandbox comes from `sandbox` (all) or the sandbox role over the bus (gateway).
   */
  engineOptions?: Omit<EngineOptions, 'bus' | 'config' | 'startEnforcer' | 'sandbox'>;
  /** The local sandbox of roles all and sandbox (default: one created from the config; false: none, so role all runs no runner). */
  sandbox?: Sandbox | false;
  /** Consume gateway session commands (`gateway.cmd.>`, queue group `gateway`) with the engine (default true). */
  sessionEvents?: boolean;
  /** The actor id announced for `toolsearch status` (default `<hostname-less pid>-<random>`). */
  id?: string;
  /** Remote code runs of role gateway: margin, heartbeat. */
  remote?: Omit<RemoteSandboxOptions, 'bus'>;
  /** Infrastructure trouble of the actors (a decision that could not be published...). Never thrown. */
  onError?: (message: string) => void;
  onProgress?: (line: string) => void;
}

export interface RoleServices {
  role: Role;
  id: string;
  /** The turn engine (roles gateway and all). */
  engine?: Engine;
  sessionEvents?: SessionEventConsumer;
  enforcer?: PolicyEnforcer;
  runner?: SandboxRunner;
  /** Session ownership among the gateway members (NATS, with session commands on). */
  ownership?: SessionOwnership;
  /** Stops the actors in reverse order of start, closes the engine and the sandboxes this call created. Idempotent. */
  close(): Promise<void>;
}

/** A bus that can announce actors (the NATS bus); the embedded one cannot, and needs not. */
interface Announcer {
  announce(role: string, id: string): () => void;
}
const canAnnounce = (bus: EventBus): bus is EventBus & Announcer =>
  typeof (bus as Partial<Announcer>).announce === 'function';
/** The NATS bus (its connection and stream names), where several gateway members share the sessions. */
const isNatsBus = (bus: EventBus): bus is NatsBus =>
  typeof (bus as Partial<NatsBus>).connection === 'object' && typeof (bus as Partial<NatsBus>).streams === 'object';

/** The local sandbox of a process, sized by the config. */
function localSandbox(config: ResolvedConfig): Sandbox {
  return createSandbox({
    poolSize: config.sandbox.poolSize,
    maxOldSpaceMb: config.sandbox.maxOldSpaceMb,
    requireIsolation: config.sandbox.requireIsolation,
    maxLogBytes: config.sandbox.maxLogBytes,
    maxResultBytes: config.sandbox.maxResultBytes,
  });
}

/**
 * Starts the actors of one deployment role on a bus (see README, "Roles"):
 * - `policy`: the policy-enforcement actor only (answers `call.requested`, queue group `policy`).
 * - `sandbox`: the sandbox runner actor only (answers code runs on `toolsearch.rpc.code.run`, queue group `sandbox`).
 * - `gateway`: the turn engine with no enforcer of its own (decisions come from the policy role) and code runs
 *   sent to the sandbox role, plus the Gateway session event consumer (queue group `gateway`).
 * - `all`: everything in one process: engine with its own enforcer and local sandbox, the consumer, and a runner
 *   on the same sandbox (so other gateways may use it).
 * Each role is announced on the bus (`toolsearch status`) when the bus can announce (NATS).
 */
export async function startRoleServices(opts: RoleServicesOptions): Promise<RoleServices> {
  const { role, bus, config } = opts;
  const id = opts.id ?? `${process.pid}-${randomUUID().slice(0, 8)}`;
  const say = opts.onProgress ?? (() => undefined);
  const closers: Array<() => Promise<void> | void> = [];
  const out: RoleServices = { role, id, close: async () => undefined };
  const announce = (r: string) => {
    if (canAnnounce(bus)) closers.push(bus.announce(r, id));
  };

  try {
    if (role === 'policy') {
      const enforcer = startPolicyEnforcer({
        bus,
        config,
        queue: 'policy',
        ...(opts.onError === undefined ? {} : { onError: opts.onError }),
      });
      closers.push(() => enforcer.stop());
      out.enforcer = enforcer;
      announce('policy');
      say(`policy enforcer ${id} answers call.requested (queue group policy)`);
    }

    let sandbox: Sandbox | undefined;
    if (role === 'sandbox' || (role === 'all' && opts.sandbox !== false)) {
      const given = opts.sandbox === false ? undefined : opts.sandbox;
      const s = given ?? localSandbox(config);
      if (given === undefined) closers.push(() => s.close());
      sandbox = s;
      const runner = startSandboxRunner({
        bus,
        sandbox: s,
        queue: 'sandbox',
        ...(opts.onError === undefined ? {} : { onError: opts.onError }),
      });
      closers.push(() => runner.stop());
      out.runner = runner;
      announce('sandbox');
      const a = await s.available();
      say(
        a.ok
          ? `sandbox runner ${id} answers code runs (queue group sandbox)`
          : `warning: sandbox runner ${id} started but code mode is unavailable here: ${a.reason}`,
      );
    }

    if (role === 'gateway' || role === 'all') {
      if (opts.engineOptions === undefined)
        throw new Error(`role ${role} needs engineOptions (staticSources, includeConfigMcp)`);
      const remote = role === 'gateway' ? createRemoteSandbox({ bus, ...opts.remote }) : undefined;
      if (remote !== undefined) closers.push(() => remote.close());
      // search.learnFromCalls: an actor learns (query, tool called) pairs from this bus; the engine ranks with them.
      const learning = config.search.learnFromCalls
        ? await startCallLearning(bus, config.search, (m) => say(`warning: ${m}`))
        : undefined;
      if (learning !== undefined) closers.push(() => learning.stop());
      // With several members owning sessions (NATS), the engine's facts go through the fence: a member that cannot
      // renew its lease, or that lost a session, publishes nothing for it (so no call of it starts here).
      let fence: Fence | undefined;
      const engineBus =
        isNatsBus(bus) && opts.sessionEvents !== false ? fencedBus(bus, () => fence, config.gateway.takeoverMs) : bus;
      const engine = createEngine({
        ...opts.engineOptions,
        bus: engineBus,
        config,
        ...(learning === undefined ? {} : { callMemory: learning.memory }),
        startEnforcer: role === 'all',
        ...(remote !== undefined ? { sandbox: remote } : sandbox !== undefined ? { sandbox } : {}),
      });
      closers.push(() => engine.close());
      out.engine = engine;
      if (role === 'all') announce('policy');
      if (opts.sessionEvents !== false) {
        // On NATS each session has one owning member (a lease in JetStream KV): a command that lands at another
        // member is forwarded to the owner, and a member that stops renewing loses its sessions to the others.
        let ownership: Awaited<ReturnType<typeof openSessionOwners>> | undefined;
        if (isNatsBus(bus)) {
          const o = await openSessionOwners({
            connection: bus.connection,
            streamPrefix: bus.streams.events.slice(0, -'TOOLSEARCH_EVENTS'.length),
            memberId: id.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 128),
            takeoverMs: config.gateway.takeoverMs,
            ...(opts.onError === undefined ? {} : { onError: opts.onError }),
          });
          ownership = o;
          out.ownership = o;
          fence = o;
          closers.push(() => o.close({ handover: true }));
        }
        const consumer = startSessionEventConsumer({
          bus,
          engine,
          config,
          queue: 'gateway',
          ...(ownership === undefined ? {} : { ownership }),
          ...(opts.onError === undefined ? {} : { onError: opts.onError }),
        });
        // Closing hands the owned sessions to the other members (their turns continue there), within the bound.
        closers.push(() =>
          ownership === undefined
            ? consumer.stop()
            : consumer.handover(config.gateway.drainMs).then((handed) => {
                if (handed.length > 0) say(`gateway ${id}: handed ${handed.length} sessions over to the other members`);
              }),
        );
        out.sessionEvents = consumer;
      }
      announce('gateway');
      say(
        role === 'gateway'
          ? `gateway ${id}: turns here, policy decisions from the policy role, code runs on the sandbox role`
          : `all roles in this process (${id}): turns, policy enforcement, code runs`,
      );
    }
  } catch (e) {
    for (const c of closers.splice(0).reverse())
      await Promise.resolve()
        .then(c)
        .catch(() => undefined);
    throw e;
  }

  let closing: Promise<void> | undefined;
  out.close = () =>
    (closing ??= (async () => {
      for (const c of closers.splice(0).reverse())
        await Promise.resolve()
          .then(c)
          .catch(() => undefined);
    })());
  return out;
}
