import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { describeError } from '../../machines/index.js';

const dir = fileURLToPath(new URL('../../machines/', import.meta.url));
const files = readdirSync(dir).filter((f) => f.endsWith('.ts'));

describe('machines/ stays pure', () => {
  it('has machine files to check', () => {
    expect(files).toEqual(expect.arrayContaining(['turn.ts', 'toolCall.ts', 'sandboxRun.ts', 'index.ts']));
  });

  for (const file of files) {
    it(`${file} imports only xstate, its siblings and types`, () => {
      const text = readFileSync(dir + file, 'utf8');
      const imports = [...text.matchAll(/^(import|export)\s+(type\s+)?[^;]*?from\s+'([^']+)'/gms)];
      if (text.includes(' from ')) expect(imports.length).toBeGreaterThan(0); // the pattern did find them
      for (const [, , typeOnly, from] of imports) {
        const allowed = typeOnly !== undefined || from === 'xstate' || from?.startsWith('./');
        expect(allowed, `${file}: value import from ${from}`).toBe(true);
      }
      expect(text).not.toMatch(/Date\.now|new Date\(|Math\.random|randomUUID|performance\.now|setTimeout/);
    });
  }
});

describe('describeError', () => {
  it('keeps a dotted code and the message, prefixed with where it broke', () => {
    const error = Object.assign(new Error('gone'), { code: 'mcp.serverGone' });
    expect(describeError(error, 'x.fallback', 'at listSources')).toEqual({
      code: 'mcp.serverGone',
      message: 'at listSources: gone',
    });
  });

  it('ignores Node-style codes that are not dotted', () => {
    const error = Object.assign(new Error('no such file'), { code: 'ENOENT' });
    expect(describeError(error, 'turn.listSourcesFailed', 'p').code).toBe('turn.listSourcesFailed');
  });

  it('describes thrown strings, objects and cycles without throwing', () => {
    expect(describeError('plain', 'a.b', 'p').message).toBe('p: plain');
    expect(describeError({ why: 1 }, 'a.b', 'p').message).toBe('p: {"why":1}');
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(describeError(cycle, 'a.b', 'p').message).toBe('p: [object Object]');
    expect(describeError(undefined, 'a.b', 'p').message).toBe('p: undefined');
  });
});
