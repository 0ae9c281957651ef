import MiniSearch from 'minisearch';
import type { ToolEntry } from '../../src/catalog/index.js';
import type { Ranker } from '../../src/search/index.js';

/** Baseline 1: MiniSearch with default options over name + description. */
export function miniSearchDefaults(entries: readonly ToolEntry[]): Ranker {
  const ms = new MiniSearch<{ id: string; name: string; description: string }>({ fields: ['name', 'description'] });
  ms.addAll(entries.map((e) => ({ id: e.id, name: e.name, description: e.description })));
  return { rankIds: (q) => ms.search(q).slice(0, 10).map((r) => String(r.id)) };
}

/** Baseline 2: a substring scorer: how many query words occur in the lowercased name + description. */
export function substringScorer(entries: readonly ToolEntry[]): Ranker {
  const texts = entries.map((e) => ({ id: e.id, text: `${e.name} ${e.description}`.toLowerCase() }));
  return {
    rankIds: (q) => {
      const words = q.toLowerCase().split(/\s+/).filter((w) => w !== '');
      return texts
        .map((t) => ({ id: t.id, score: words.filter((w) => t.text.includes(w)).length }))
        .filter((s) => s.score > 0)
        .sort((a, b) => b.score - a.score)
        .map((s) => s.id);
    },
  };
}
