import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/index.js';

describe('config search.learnFromCalls', () => {
  it('is off by default, with a history file next to the event log and a cap of 10,000 pairs', () => {
    const r = parseConfig({}, undefined, { cwd: '/base' });
    expect(r.ok && r.value.config.search).toEqual({
      learnFromCalls: false,
      learnedCallsPath: '/base/.toolsearch/learned-calls.jsonl',
      maxLearnedCalls: 10_000,
    });
  });

  it('turns on, with its path resolved against the config folder', () => {
    const r = parseConfig(
      { search: { learnFromCalls: true, learnedCallsPath: 'state/calls.jsonl', maxLearnedCalls: 500 } },
      '/etc/ts/toolsearch.config.json5',
    );
    expect(r.ok && r.value.config.search).toEqual({
      learnFromCalls: true,
      learnedCallsPath: '/etc/ts/state/calls.jsonl',
      maxLearnedCalls: 500,
    });
  });

  it('rejects a wrong value with an error naming the key and what is allowed', () => {
    const bad = parseConfig({ search: { learnFromCalls: 'yes' } });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.message).toMatch(/search\.learnFromCalls/);
    const unknown = parseConfig({ search: { learnFromCall: true } });
    expect(unknown.ok).toBe(false);
    if (!unknown.ok) expect(unknown.error.message).toMatch(/learnFromCall/);
    const cap = parseConfig({ search: { maxLearnedCalls: 0 } });
    expect(cap.ok).toBe(false);
  });
});
