// A session belongs to the API key that opened it, also after the gateway restarts: the owning principal is recorded
// beside the event log before the session's first turn, and checked on every continue. Checked by effect: the
// owner-only tool another key tries to reach through the session writes a witness line if it runs.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app/index.js';
import { parseConfig } from '../../src/config/index.js';
import { hashApiKey, newApiKey } from '../../src/gateway/index.js';
import { postJson } from '../support/http.js';
import { noLagAdmission } from '../support/gateway.js';

const dir = mkdtempSync(join(tmpdir(), 'ts-owners-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const witness = join(dir, 'owner-ran.txt');
writeFileSync(
  join(dir, 'reset.mjs'),
  `import { appendFileSync } from 'node:fs';
export default { id: 'ops', tools: [{ name: 'owner_reset', description: 'Reset everything (owner only).', ownerOnly: true,
  parameters: { type: 'object', properties: {} }, execute: (a, ctx) => { appendFileSync(${JSON.stringify(witness)}, ctx.sessionId + '\\n'); return { reset: true }; } }] };`,
);
const appKey = newApiKey();
const opsKey = newApiKey();

async function gateway() {
  const parsed = parseConfig(
    {
      tools: { toolSearch: { mode: 'tools' } },
      gateway: noLagAdmission,
      plugins: ['./reset.mjs'],
      log: { path: 'events.jsonl' },
      principals: {
        app: { keySha256: hashApiKey(appKey) },
        ops: { keySha256: hashApiKey(opsKey), owner: true },
      },
    },
    undefined,
    { cwd: dir },
  );
  if (!parsed.ok) throw new Error(parsed.error.message);
  const r = await startGateway({ config: parsed.value.config, cwd: dir, port: 0 });
  if (!r.ok) throw new Error(r.error.message);
  return r.value;
}

const chat = (url: string, key: string, content: string, session: string) =>
  postJson(
    `${url}/v1/chat/completions`,
    { model: 'any', messages: [{ role: 'user', content }] },
    { authorization: `Bearer ${key}`, 'x-toolsearch-session': session },
  );

describe('session ownership survives a restart', () => {
  it("refuses another key's continue of a session opened before the restart (session.notYours), and nothing runs", async () => {
    const first = await gateway();
    try {
      expect((await chat(first.url, appKey, 'hello', 'kept-1')).status).toBe(200);
    } finally {
      await first.close();
    }
    expect(readFileSync(join(dir, 'session-owners.jsonl'), 'utf8')).toContain('"kept-1"');
    expect(readFileSync(join(dir, 'session-owners.jsonl'), 'utf8')).not.toContain(appKey);

    const second = await gateway();
    try {
      const stolen = await chat(second.url, opsKey, 'target=owner_reset', 'kept-1');
      expect(stolen.status).toBe(403);
      expect(stolen.json.error).toMatchObject({ code: 'session.notYours', param: 'x-toolsearch-session' });
      expect(existsSync(witness)).toBe(false);
      // The owner continues it; the other key's own sessions work.
      expect((await chat(second.url, appKey, 'hello again', 'kept-1')).status).toBe(200);
      expect((await chat(second.url, opsKey, 'target=owner_reset', 'ops-1')).status).toBe(200);
      expect(readFileSync(witness, 'utf8')).toBe('ops-1\n');
    } finally {
      await second.close();
    }
  }, 60_000);
});
