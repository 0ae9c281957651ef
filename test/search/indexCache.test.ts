import { describe, expect, it } from 'vitest';
import { IndexCache } from '../../src/search/index.js';
import { catalogOf, fixtureEntries, mcpTool } from './fixture.js';

describe('IndexCache', () => {
  it('reuses the index while the fingerprint is unchanged', () => {
    const cache = new IndexCache();
    const catalog = catalogOf(fixtureEntries());
    const first = cache.get(catalog);
    expect(cache.get(catalog)).toBe(first);
    expect(cache.get({ ...catalog, entries: [...catalog.entries] })).toBe(first);
    expect(cache.stats()).toMatchObject({ builds: 1, incrementalUpdates: 0, reuses: 2 });
  });

  it('updates only the changed source, without a rebuild, and search reflects the change', () => {
    const cache = new IndexCache();
    const entries = fixtureEntries();
    const index = cache.get(catalogOf(entries));
    const changed = entries
      .filter((e) => e.id !== 'mcp:slack:slack_add_reaction')
      .map((e) => (e.id === 'mcp:slack:slack_get_users' ? { ...e, description: 'Get every member profile of the workspace' } : e));
    changed.push(mcpTool('slack', ['slack_pin_message', 'Pin a message to the channel so everyone sees it']));
    const updated = cache.get(catalogOf(changed));
    expect(updated).toBe(index);
    expect(cache.stats()).toMatchObject({ builds: 1, incrementalUpdates: 1, sourcesUpdated: 1 });
    expect(updated.size).toBe(changed.length);
    expect(updated.rankIds('pin a message')[0]).toBe('mcp:slack:slack_pin_message');
    expect(updated.rankIds('member profile')[0]).toBe('mcp:slack:slack_get_users');
    expect(updated.get('mcp:slack:slack_add_reaction')).toBeUndefined();
    expect(updated.rankIds('reaction emoji')).not.toContain('mcp:slack:slack_add_reaction');
  });

  it('adds and drops whole sources incrementally', () => {
    const cache = new IndexCache();
    const entries = fixtureEntries();
    cache.get(catalogOf(entries));
    const withJira = [...entries, mcpTool('jira', ['create_ticket', 'Create a Jira ticket'])];
    expect(cache.get(catalogOf(withJira)).rankIds('jira ticket')[0]).toBe('mcp:jira:create_ticket');
    const withoutBrowser = withJira.filter((e) => e.owner !== 'browser');
    const idx = cache.get(catalogOf(withoutBrowser));
    expect(idx.rankIds('take a screenshot').some((id) => id.startsWith('mcp:browser:'))).toBe(false);
    expect(cache.stats()).toMatchObject({ builds: 1, incrementalUpdates: 2 });
  });

  it('rebuilds when most sources changed or the per-source digests cannot say what changed', () => {
    const cache = new IndexCache();
    const entries = fixtureEntries();
    cache.get(catalogOf(entries));
    const all = entries.map((e) => ({ ...e, description: `${e.description}!` }));
    cache.get(catalogOf(all));
    expect(cache.stats()).toMatchObject({ builds: 2, incrementalUpdates: 0 });
    // Same per-source digests but another fingerprint (e.g. a policy filter applied): rebuild, never stale.
    const filtered = catalogOf(all.slice(1));
    const idx = cache.get({ ...filtered, sourceFingerprints: catalogOf(all).sourceFingerprints });
    expect(cache.stats().builds).toBe(3);
    expect(idx.size).toBe(all.length - 1);
  });
});
