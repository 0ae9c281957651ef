/** One layer of allow/deny glob patterns (see glob.ts); a pattern is matched against a tool's id and its bare name. */
export interface PolicyLayer {
  allow?: string[];
  deny?: string[];
}

/** Where a layer comes from, from the widest to the narrowest. */
export type PolicyLayerName = 'global' | 'agent' | 'profile' | 'sandbox' | 'session';

export interface NamedPolicyLayer {
  name: PolicyLayerName;
  allow: string[];
  deny: string[];
}

/** The policy of one turn: ordered layers (global, agent, profile, sandbox, session) and whether the session is the owner's. */
export interface EffectivePolicy {
  layers: NamedPolicyLayer[];
  owner: boolean;
  /** false: patterns match ignoring case (config `tools.matchCase: false`); absent = true. */
  matchCase?: boolean;
}

export interface PolicyInput {
  /** Config `tools.allow` / `tools.deny`. */
  global?: PolicyLayer;
  agent?: PolicyLayer;
  profile?: PolicyLayer;
  sandbox?: PolicyLayer;
  session?: PolicyLayer;
  /** Owner sessions may use ownerOnly tools; absent means not owner. */
  owner?: boolean;
  /** false: patterns match ignoring case; absent = true. */
  matchCase?: boolean;
}

export type ToolCheck = { allowed: true } | { allowed: false; reason: string };
