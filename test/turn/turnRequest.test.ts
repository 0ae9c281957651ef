import { describe, expect, it } from 'vitest';
import { checkTurnRequest } from '../../src/turn/index.js';

describe('checkTurnRequest', () => {
  it('accepts a minimal and a full request', () => {
    expect(checkTurnRequest({ sessionId: 's' }).ok).toBe(true);
    const full = {
      sessionId: 's',
      turnId: 't',
      agentId: 'a',
      profile: 'p',
      sandboxId: 'x',
      owner: true,
      mode: 'code',
      harness: 'codex',
      clientId: 'c',
      clientTools: [{ name: 'n' }],
      mcpServers: { m: { command: 'node' } },
      trace: { traceparent: '00-1-2-01' },
      principal: 'key:k',
    };
    expect(checkTurnRequest(full)).toEqual({ ok: true, value: full });
  });

  it('names each field at fault and what it must be, with a code for a bad harness or mode', () => {
    const blank = checkTurnRequest({ sessionId: '  ' });
    expect(blank).toMatchObject({ ok: false, error: { code: 'turn.invalidRequest' } });
    if (!blank.ok)
      expect(blank.error.message).toContain('"sessionId" is "  ": expected a non-empty "sessionId" string');
    const harness = checkTurnRequest({ sessionId: 's', harness: 'gpt' });
    expect(harness).toMatchObject({ ok: false, error: { code: 'turn.badHarness' } });
    if (!harness.ok) expect(harness.error.message).toMatch(/"harness" is "gpt": expected "pi".*"codex"/);
    expect(checkTurnRequest({ sessionId: 's', mode: 'fast' })).toMatchObject({
      ok: false,
      error: { code: 'turn.badMode', message: expect.stringContaining('"direct", "tools" or "code"') },
    });
    const typed = checkTurnRequest({ sessionId: 's', owner: 'yes', agentId: 7 });
    expect(typed).toMatchObject({ ok: false, error: { code: 'turn.invalidRequest' } });
    if (!typed.ok) {
      expect(typed.error.message).toContain('"owner" is "yes": expected true or false');
      expect(typed.error.message).toContain('"agentId" is 7: expected a string');
    }
    expect(checkTurnRequest(null)).toMatchObject({ ok: false, error: { code: 'turn.invalidRequest' } });
  });
});
