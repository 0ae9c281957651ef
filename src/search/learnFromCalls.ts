import { appendFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { EVENT_SUBJECT_PREFIX, type Envelope } from '../events/index.js';
import { CallMemory } from './callMemory.js';
import type { LearnedCall } from './callMemory.js';

/** Config `search.*` of learning from calls (see ResolvedConfig.search). */
export interface LearnFromCallsSettings {
  learnFromCalls: boolean;
  learnedCallsPath: string;
  maxLearnedCalls: number;
}

/**
 * What the learner needs of the bus: a subscription to the facts. Any `EventBus` is one (search sits below `bus`
 * in the capability order, so it names only this much of it).
 */
export interface FactSubscriber {
  subscribe(pattern: string, onEvent: (e: Envelope) => void): () => void;
}

/** A running learner: its memory (handed to the engine's indexes) and how to stop it. */
export interface CallLearning {
  memory: CallMemory;
  /** Pairs loaded from the history file at start. */
  loaded: number;
  /** Unsubscribes and waits for pending writes. */
  stop(): Promise<void>;
}

/** Searches remembered per session, newest last: a call follows one of the session's recent searches. */
const SEARCHES_PER_SESSION = 8;
/** Sessions tracked at once; the least recently active is forgotten first. */
const MAX_SESSIONS = 2_000;
/** Call ids remembered, so an event delivered twice is learned once. */
const MAX_SEEN_CALLS = 10_000;
/** The longest query stored. */
const MAX_QUERY_CHARS = 300;

interface SeenSearch {
  query: string;
  resultIds: ReadonlySet<string>;
}

/**
 * Learning from calls, as an actor on the bus: it follows each session's `search.performed` events and, on a
 * `call.completed` (the tool ran and returned), learns the pair (the query of the latest search of that session
 * that showed the tool, the tool's id). Nothing else: no arguments (the events carry only their digest), no
 * results. Pairs go to the memory the engine's indexes rank with, and to a history file of their own (JSONL
 * `{"query", "toolId", "at"}`), rewritten from the memory when it holds twice the cap, so it stays bounded. A
 * missing file starts empty; unreadable lines are skipped (reported through onWarning).
 */
export async function startCallLearning(
  bus: FactSubscriber,
  settings: LearnFromCallsSettings,
  onWarning?: (message: string) => void,
): Promise<CallLearning> {
  const memory = new CallMemory(settings.maxLearnedCalls);
  const file = settings.learnedCallsPath;
  const loaded = await loadHistory(file, memory, onWarning);
  let lines = loaded;
  const sessions = new Map<string, SeenSearch[]>();
  const seenCalls = new Set<string>();
  let writes: Promise<void> = Promise.resolve();
  const write = (fn: () => Promise<void>): void => {
    writes = writes
      .then(fn)
      .catch((err: unknown) => onWarning?.(`search.learnFromCalls: cannot write ${file}: ${(err as Error).message}`));
  };

  const onEvent = (e: Envelope): void => {
    if (e.type === 'search.performed') {
      const d = e.data as { query?: unknown; resultIds?: unknown };
      if (typeof d.query !== 'string' || !Array.isArray(d.resultIds) || d.resultIds.length === 0) return;
      let list = sessions.get(e.sessionId);
      if (list === undefined) list = [];
      else sessions.delete(e.sessionId);
      sessions.set(e.sessionId, list);
      list.push({
        query: d.query.slice(0, MAX_QUERY_CHARS),
        resultIds: new Set(d.resultIds.filter((x): x is string => typeof x === 'string')),
      });
      if (list.length > SEARCHES_PER_SESSION) list.shift();
      if (sessions.size > MAX_SESSIONS) sessions.delete(sessions.keys().next().value as string);
      return;
    }
    if (e.type !== 'call.completed') return;
    const d = e.data as { callId?: unknown; toolId?: unknown };
    if (typeof d.toolId !== 'string' || typeof d.callId !== 'string') return;
    const key = `${e.sessionId}\u0000${d.callId}`;
    if (seenCalls.has(key)) return;
    seenCalls.add(key);
    if (seenCalls.size > MAX_SEEN_CALLS) seenCalls.delete(seenCalls.values().next().value as string);
    const list = sessions.get(e.sessionId) ?? [];
    let search: SeenSearch | undefined;
    for (let i = list.length - 1; i >= 0 && search === undefined; i--)
      if ((list[i] as SeenSearch).resultIds.has(d.toolId)) search = list[i];
    if (search === undefined) return; // a call that followed no search teaches nothing about search
    const pair: LearnedCall = { query: search.query, toolId: d.toolId, at: e.at };
    memory.record(pair);
    lines++;
    if (lines > 2 * memory.maxPairs) {
      lines = memory.size;
      const all = memory.toList();
      write(() => rewrite(file, all));
    } else write(() => append(file, pair));
  };
  const unsubscribe = bus.subscribe(`${EVENT_SUBJECT_PREFIX}.>`, onEvent);
  return {
    memory,
    loaded,
    stop: async () => {
      unsubscribe();
      await writes;
    },
  };
}

async function loadHistory(file: string, memory: CallMemory, onWarning?: (message: string) => void): Promise<number> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    onWarning?.(
      `search.learnFromCalls: cannot read ${file}: ${(err as Error).message}; starting with no learned calls.`,
    );
    return 0;
  }
  let n = 0;
  let bad = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const v = JSON.parse(line) as { query?: unknown; toolId?: unknown; at?: unknown };
      if (typeof v.query !== 'string' || typeof v.toolId !== 'string') throw new Error('not a pair');
      memory.record(
        typeof v.at === 'string'
          ? { query: v.query, toolId: v.toolId, at: v.at }
          : { query: v.query, toolId: v.toolId },
      );
      n++;
    } catch {
      bad++;
    }
  }
  if (bad > 0)
    onWarning?.(
      `search.learnFromCalls: skipped ${bad} unreadable line(s) of ${file}; each line must be {"query": "...", "toolId": "..."}.`,
    );
  return n;
}

async function append(file: string, pair: LearnedCall): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  await appendFile(file, `${JSON.stringify(pair)}\n`);
}

async function rewrite(file: string, pairs: readonly LearnedCall[]): Promise<void> {
  await mkdir(dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, pairs.map((p) => `${JSON.stringify(p)}\n`).join(''));
  await rename(tmp, file);
}
