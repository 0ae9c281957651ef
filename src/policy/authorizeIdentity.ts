import type { Principal } from '../config/index.js';
import { fail, ok, type Result } from '../shared/index.js';

/** The identity a turn runs as: who it is for and with which rights. */
export interface TurnIdentity {
  agentId: string;
  profile: string;
  sandboxId: string;
  owner: boolean;
}

/** What a command or request asks for; an absent field takes the principal's default. */
export type RequestedIdentity = Partial<TurnIdentity>;

/** The identity of a command or request from outside when no principals are configured. */
export const DEFAULT_IDENTITY: TurnIdentity = Object.freeze({
  agentId: 'default',
  profile: 'default',
  sandboxId: 'default',
  owner: false,
});

/**
 * The identity a turn of `principal` runs as, given what its command asked for. A principal may only narrow: each
 * asked agent, profile and sandbox must be one its config lists (an absent one is the first listed), and `owner: true`
 * needs the owner right. A request for more is refused with `principal.notAllowed`, naming what was asked and what is
 * allowed. Pure: no I/O.
 */
export function authorizeIdentity(principal: Principal, requested: RequestedIdentity): Result<TurnIdentity> {
  const pick = (what: string, asked: string | undefined, allowed: string[]): Result<string> => {
    if (asked === undefined) {
      const first = allowed[0];
      return first === undefined
        ? fail(
            'principal.notAllowed',
            `Principal "${principal.name}" may use no ${what}: list one under principals.${principal.name}.${what}s in the config.`,
          )
        : ok(first);
    }
    if (allowed.includes(asked)) return ok(asked);
    return fail(
      'principal.notAllowed',
      `Principal "${principal.name}" asked for ${what} "${asked}" but may use only ${allowed.map((a) => `"${a}"`).join(', ') || 'none'} (principals.${principal.name}.${what}s).`,
      { principal: principal.name, field: what, asked, allowed },
    );
  };
  const agent = pick('agent', requested.agentId, principal.agents);
  if (!agent.ok) return agent;
  const profile = pick('profile', requested.profile, principal.profiles);
  if (!profile.ok) return profile;
  const sandbox = pick('sandbox', requested.sandboxId, principal.sandboxes);
  if (!sandbox.ok) return sandbox;
  if (requested.owner === true && !principal.owner) {
    return fail(
      'principal.notAllowed',
      `Principal "${principal.name}" asked for owner rights but has none (set principals.${principal.name}.owner: true to grant them).`,
      { principal: principal.name, field: 'owner', asked: true, allowed: false },
    );
  }
  return ok({
    agentId: agent.value,
    profile: profile.value,
    sandboxId: sandbox.value,
    owner: requested.owner ?? false,
  });
}
