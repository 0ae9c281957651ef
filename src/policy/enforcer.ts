import type { EventBus } from '../bus/index.js';
import type { ResolvedConfig } from '../config/index.js';
import { makeEnvelope, typeToken, type EventOf } from '../events/index.js';
import { checkTool } from './checkTool.js';
import { globMatch } from './glob.js';
import { resolvePolicy } from './resolvePolicy.js';
import type { EffectivePolicy, PolicyInput } from './types.js';

/** Who runs a session: the facts a policy is resolved from. */
export interface SessionFacts {
  sessionId: string;
  agentId: string;
  profile: string;
  sandboxId: string;
  owner: boolean;
}

/** The enforcer's answer to one call request. */
export interface CallVerdict {
  decision: 'allowed' | 'blocked' | 'approvalRequired';
  reason?: string;
}

const own = <T>(record: Record<string, T>, key: string): T | undefined =>
  Object.hasOwn(record, key) ? record[key] : undefined;

/**
 * The policy layers of a session from the config: global `tools.allow/deny`, then `agents[agentId]`,
 * `profiles[profile]`, `sandboxes[sandboxId]` and `sessions[sessionId]`, plus the owner flag. Pure: no I/O.
 */
export function policyInputFor(config: ResolvedConfig, facts: SessionFacts): PolicyInput {
  const input: PolicyInput = { owner: facts.owner, ...(config.tools.matchCase === false ? { matchCase: false } : {}) };
  input.global =
    config.tools.allow === undefined
      ? { deny: config.tools.deny }
      : { allow: config.tools.allow, deny: config.tools.deny };
  const agent = own(config.agents, facts.agentId);
  if (agent) input.agent = agent.tools;
  const profile = own(config.profiles, facts.profile);
  if (profile) input.profile = profile.tools;
  const sandbox = own(config.sandboxes, facts.sandboxId);
  if (sandbox) input.sandbox = sandbox.tools;
  const session = own(config.sessions, facts.sessionId);
  if (session) input.session = session.tools;
  return input;
}

/** The effective policy of a session under a config. Pure: no I/O. */
export function sessionPolicy(config: ResolvedConfig, facts: SessionFacts): EffectivePolicy {
  return resolvePolicy(policyInputFor(config, facts));
}

/** Whether a tool (by id or bare name) needs an approver, by config `tools.approval.require`. Pure: no I/O. */
export function approvalPattern(config: ResolvedConfig, tool: { id: string; name: string }): string | undefined {
  const ignoreCase = config.tools.matchCase === false;
  return config.tools.approval.require.find(
    (p) => globMatch(p, tool.id, ignoreCase) || globMatch(p, tool.name, ignoreCase),
  );
}

/**
 * The enforcer's decision for one requested call: blocked when the effective policy (deny anywhere, every allow
 * list, owner-only) does not allow the tool; approval required when it matches `tools.approval.require`; allowed
 * otherwise. Pure: no I/O.
 */
export function decideCall(
  config: ResolvedConfig,
  facts: SessionFacts,
  tool: { id: string; name: string; ownerOnly?: boolean },
): CallVerdict {
  const policy = sessionPolicy(config, facts);
  const entry = {
    id: tool.id,
    name: tool.name,
    ownerOnly: tool.ownerOnly === true,
    source: 'openclaw' as const,
    owner: '',
    sourceName: '',
    description: '',
    inputSchema: {},
    origin: 'gateway' as const,
    trusted: true,
  };
  const check = checkTool(entry, policy);
  if (!check.allowed) return { decision: 'blocked', reason: check.reason };
  const pattern = approvalPattern(config, tool);
  if (pattern !== undefined)
    return { decision: 'approvalRequired', reason: `${tool.id} needs approval (tools.approval.require "${pattern}")` };
  return { decision: 'allowed' };
}

export interface PolicyEnforcerOptions {
  bus: EventBus;
  config: ResolvedConfig;
  /**
   * Shared mode (no `decider`): the queue group, so several enforcers of a deployment share the work (default
   * `policy`; on NATS a durable work-queue consumer). Such an enforcer decides only requests that name no decider.
   */
  queue?: string;
  /**
   * Private mode: the id of the engine this enforcer is embedded in. It subscribes on its own (no queue group, no
   * durable consumer) and decides only requests that name this decider and that `owns` accepts; every other
   * request, of any other process or engine, is left alone.
   */
  decider?: string;
  /** Private mode: whether the engine started the request's turn (default: every request naming the decider). */
  owns?: (request: EventOf<'call.requested'>) => boolean;
  /**
   * A request older than this (by its `at`) is not decided and nothing is recorded: its turn has already blocked
   * it (fail closed), so a late decision would only contradict the record. Default config `nats.decisionTimeoutMs`.
   */
  decisionTimeoutMs?: number;
  now?: () => Date;
  newId?: () => string;
  /** Where a failure to publish a decision is reported (the turn then blocks at its bound: fail closed). */
  onError?: (message: string) => void;
}

export interface PolicyEnforcer {
  /** Decisions published so far. */
  readonly decided: number;
  /** Requests left undecided because they were older than the decision timeout. */
  readonly skippedStale: number;
  stop(): void;
}

/** The subject pattern of every `call.requested` event of every session and turn. */
export const CALL_REQUESTED_PATTERN = `toolsearch.evt.*.*.${typeToken('call.requested')}`;

/** Whether a request is this enforcer's to decide (shared: no decider named; private: its decider and owned). Pure: no I/O. */
export function isOwnRequest(
  req: EventOf<'call.requested'>,
  scope: { decider?: string; owns?: (r: EventOf<'call.requested'>) => boolean },
): boolean {
  const named = (req.data as { decider?: unknown } | null)?.decider;
  if (scope.decider === undefined) return named === undefined;
  return named === scope.decider && (scope.owns === undefined || scope.owns(req));
}

/** Whether a request was made longer ago than the decision timeout (its turn no longer waits). Pure: no I/O. */
export function isStaleRequest(at: string, now: Date, decisionTimeoutMs: number): boolean {
  const t = Date.parse(at);
  return !Number.isNaN(t) && now.getTime() - t > decisionTimeoutMs;
}

/**
 * The policy-enforcement actor: subscribes to `call.requested`, recomputes the effective policy from the session
 * facts the request carries and the config, and publishes `call.decided` (allowed, blocked with the reason, or
 * approvalRequired) as the answer: same session and turn, `seq` = request seq + 1 (the turn reserves it),
 * `causationId` = the request's id. A request without session facts is blocked (fail closed).
 *
 * Two modes: shared (queue group `policy`, the deployment's policy role) decides requests that name no decider;
 * private (`decider` set, an engine's embedded enforcer) decides only its own engine's requests, on a
 * subscription of its own, so a process with a config of its own never decides other processes' calls.
 * Requests older than the decision timeout are skipped (nothing recorded).
 */
export function startPolicyEnforcer(opts: PolicyEnforcerOptions): PolicyEnforcer {
  const now = opts.now ?? (() => new Date());
  const timeoutMs = opts.decisionTimeoutMs ?? opts.config.nats.decisionTimeoutMs;
  const scope = {
    ...(opts.decider === undefined ? {} : { decider: opts.decider }),
    ...(opts.owns === undefined ? {} : { owns: opts.owns }),
  };
  let decided = 0;
  let skippedStale = 0;
  let stopped = false;
  const answer = async (req: EventOf<'call.requested'>): Promise<void> => {
    const d = req.data;
    const hasFacts =
      typeof d.agentId === 'string' &&
      typeof d.profile === 'string' &&
      typeof d.sandboxId === 'string' &&
      typeof d.sessionOwner === 'boolean';
    const verdict: CallVerdict = hasFacts
      ? decideCall(
          opts.config,
          {
            sessionId: req.sessionId,
            agentId: d.agentId!,
            profile: d.profile!,
            sandboxId: d.sandboxId!,
            owner: d.sessionOwner!,
          },
          { id: d.toolId, name: d.toolName, ...(d.ownerOnly === undefined ? {} : { ownerOnly: d.ownerOnly }) },
        )
      : {
          decision: 'blocked',
          reason:
            'the call request carries no session facts (agentId, profile, sandboxId, owner) to resolve a policy from',
        };
    const event = makeEnvelope({
      type: 'call.decided',
      sessionId: req.sessionId,
      turnId: req.turnId,
      seq: req.seq + 1,
      at: now(),
      causationId: req.id,
      data: {
        callId: d.callId,
        toolId: d.toolId,
        decision: verdict.decision,
        ...(verdict.reason === undefined ? {} : { reason: verdict.reason }),
      },
      ...(opts.newId === undefined ? {} : { id: opts.newId() }),
      ...(req.trace === undefined ? {} : { trace: req.trace }),
    });
    if (stopped) return;
    await opts.bus.publish(event);
    decided++;
  };
  const unsubscribe = opts.bus.subscribe(
    CALL_REQUESTED_PATTERN,
    (e) => {
      if (stopped || e.type !== 'call.requested') return;
      const req = e as EventOf<'call.requested'>;
      if (!isOwnRequest(req, scope)) return;
      if (isStaleRequest(req.at, now(), timeoutMs)) {
        skippedStale++;
        return;
      }
      answer(req).catch((err: unknown) =>
        opts.onError?.(`policy enforcer could not answer ${e.id}: ${err instanceof Error ? err.message : String(err)}`),
      );
    },
    opts.decider === undefined ? { queue: opts.queue ?? 'policy' } : {},
  );
  return {
    get decided() {
      return decided;
    },
    get skippedStale() {
      return skippedStale;
    },
    stop() {
      stopped = true;
      unsubscribe();
    },
  };
}
