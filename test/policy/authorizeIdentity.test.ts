import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.js';
import { authorizeIdentity } from '../../src/policy/index.js';

const principals = (doc: unknown) => {
  const loaded = parseConfig(doc);
  if (!loaded.ok) throw new Error(loaded.error.message);
  return loaded.value.config.principals;
};

describe('authorizeIdentity', () => {
  const all = principals({
    principals: { app: { agents: ['support', 'default'], profiles: ['readonly'], owner: false }, ops: { owner: true } },
  });

  it('takes the first listed agent and profile when the request names none (a left-out header cannot widen)', () => {
    expect(authorizeIdentity(all['app']!, {})).toEqual({
      ok: true,
      value: { agentId: 'support', profile: 'readonly', sandboxId: 'default', owner: false },
    });
  });

  it('refuses an agent, profile or owner right the principal does not have, naming what was asked and allowed', () => {
    const agent = authorizeIdentity(all['app']!, { agentId: 'admin' });
    expect(agent.ok).toBe(false);
    if (!agent.ok) {
      expect(agent.error.code).toBe('principal.notAllowed');
      expect(agent.error.message).toContain('"admin"');
      expect(agent.error.message).toContain('"support", "default"');
    }
    const owner = authorizeIdentity(all['app']!, { owner: true });
    expect(owner.ok || owner.error.message).toContain('owner rights');
    expect(authorizeIdentity(all['ops']!, { owner: true })).toMatchObject({
      ok: true,
      value: { owner: true, agentId: 'default' },
    });
  });

  it('config refuses a malformed nkey or key hash', () => {
    const bad = parseConfig({ principals: { x: { nkey: 'SUABC' } } });
    expect(bad.ok).toBe(false);
  });
});
