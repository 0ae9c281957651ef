import type { ResolvedConfig } from '../config/index.js';
import { globMatch } from './glob.js';

/**
 * The `tools.approval.autoApprove` rule that approves this call without asking (its tool pattern matches the
 * tool's id or name, and its agents and profiles, when listed, include the session's), or undefined. Pure: no I/O.
 */
export function autoApproved(
  config: ResolvedConfig,
  tool: { id: string; name: string },
  facts: { agentId: string; profile: string },
): string | undefined {
  const ignoreCase = config.tools.matchCase === false;
  for (const rule of config.tools.approval.autoApprove ?? []) {
    if (rule.agents !== undefined && !rule.agents.includes(facts.agentId)) continue;
    if (rule.profiles !== undefined && !rule.profiles.includes(facts.profile)) continue;
    const hit = rule.tools.find((p) => globMatch(p, tool.id, ignoreCase) || globMatch(p, tool.name, ignoreCase));
    if (hit !== undefined) return hit;
  }
  return undefined;
}
