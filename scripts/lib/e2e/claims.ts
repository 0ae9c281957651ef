import { isDeepStrictEqual } from 'node:util';
import { offeredNames, type LaneResult } from './lane.js';

/** A catalog to compare and its target. */
export interface GroupTarget {
  label: string;
  /** The tool the request targets: its bare name and its catalog id. */
  targetName: string;
  expectedId: string;
  /** The target's own description, when known (compact tool definitions must not carry it). */
  targetDescription?: string;
  /** The source's own schemas (exposed name -> parameters) that direct mode must send, when known exactly. */
  ownSchemas?: Map<string, unknown>;
  /** Whether this is a large catalog (claim 5 applies). */
  large: boolean;
}

/** One catalog compared three ways: direct, Tool Search code mode, Tool Search tools mode. */
export interface LaneGroup extends GroupTarget {
  direct: LaneResult;
  code: LaneResult;
  tools: LaneResult;
}

export type ClaimId = '1' | '2' | '3' | '4' | '5' | '6';

export const CLAIM_TEXT: Record<ClaimId, string> = {
  '1': 'direct mode can call the target tool',
  '2': 'Tool Search can call the same tool (code and tools mode)',
  '3': "direct mode exposes the source's tool schemas to the provider",
  '4': 'Tool Search exposes only the compact bridge',
  '5': 'the Tool Search request payload is smaller for the large catalog',
  '6': 'the session logs show the expected tool-call counts and the bridge telemetry',
};

/** The outcome of each claim for one group, with the reasons of every failure. */
export interface ClaimCheck {
  id: ClaimId;
  ok: boolean;
  problems: string[];
}

const COMPACT = { code: ['tool_search_code'], tools: ['tool_call', 'tool_describe', 'tool_search'] } as const;

/** Checks the six claims on one group of lanes. Pure: no I/O. */
export function checkClaims(g: LaneGroup): ClaimCheck[] {
  const out: ClaimCheck[] = [];
  const claim = (id: ClaimId, problems: string[]) => out.push({ id, ok: problems.length === 0, problems });
  const laneProblem = (l: LaneResult): string[] => (l.error !== undefined ? [`${l.mode}: ${l.error}`] : []);

  claim('1', [
    ...laneProblem(g.direct),
    ...(g.direct.targetCalled
      ? []
      : [`direct did not call ${g.expectedId} (answer: ${g.direct.answer.slice(0, 200)})`]),
  ]);
  claim(
    '2',
    [g.code, g.tools].flatMap((l) => [
      ...laneProblem(l),
      ...(l.targetCalled ? [] : [`${l.mode} did not call ${g.expectedId} (answer: ${l.answer.slice(0, 200)})`]),
    ]),
  );

  const p3: string[] = [];
  const first = g.direct.requests[0];
  if (first === undefined) p3.push('direct: no provider request recorded');
  else {
    const tools = (Array.isArray(first['tools']) ? first['tools'] : []) as Array<{
      function?: { name?: string; parameters?: unknown };
    }>;
    const byName = new Map(tools.map((t) => [t.function?.name, t.function?.parameters]));
    if (tools.length !== g.direct.tools)
      p3.push(`direct offered ${tools.length} tools, the catalog has ${g.direct.tools}`);
    if (g.ownSchemas !== undefined) {
      const missing = [...g.ownSchemas].filter(
        ([name, params]) => !byName.has(name) || !isDeepStrictEqual(byName.get(name), params),
      );
      if (missing.length > 0)
        p3.push(
          `direct is missing or changed ${missing.length} of the source's ${g.ownSchemas.size} schemas (e.g. ${missing[0]?.[0]})`,
        );
    } else if (![...byName.keys()].some((n) => n === g.targetName || n?.endsWith(`__${g.targetName}`))) {
      p3.push(`direct did not offer ${g.targetName}`);
    }
  }
  claim('3', p3);

  const p4: string[] = [];
  for (const l of [g.code, g.tools]) {
    const kind = l.exposedMode === 'code' ? 'code' : 'tools';
    if (l.exposedMode !== l.mode) p4.push(`${l.mode} lane ran in mode ${l.exposedMode ?? 'unknown'}`);
    if (l.requests.length === 0) p4.push(`${l.mode}: no provider request recorded`);
    l.requests.forEach((r, i) => {
      const names = offeredNames(r).sort();
      if (!isDeepStrictEqual(names, [...COMPACT[kind]]))
        p4.push(`${l.mode} request ${i + 1} offered [${names.slice(0, 5).join(', ')}${names.length > 5 ? ', …' : ''}]`);
      const defs = JSON.stringify(r['tools'] ?? []);
      if (defs.includes(g.expectedId)) p4.push(`${l.mode} request ${i + 1}: the tool definitions name ${g.expectedId}`);
      if (g.targetDescription !== undefined && defs.includes(JSON.stringify(g.targetDescription).slice(1, -1))) {
        p4.push(`${l.mode} request ${i + 1}: the tool definitions carry the description of ${g.expectedId}`);
      }
    });
  }
  claim('4', p4);

  const p5: string[] = [];
  if (g.large) {
    for (const l of [g.code, g.tools]) {
      if (!(l.requestBytes > 0 && l.requestBytes < g.direct.requestBytes))
        p5.push(`${l.mode} sent ${l.requestBytes} bytes, direct ${g.direct.requestBytes}`);
    }
  }
  claim('5', p5);

  const p6: string[] = [];
  const expectCounts = (
    l: LaneResult,
    want: { schemas: number; searches: number; describes: number; codeRuns: number },
  ) => {
    const log = l.log;
    const got = {
      schemas: log.schemasUpFront,
      searches: log.searches,
      describes: log.describes,
      codeRuns: log.codeRuns,
    };
    if (!isDeepStrictEqual(got, want))
      p6.push(`${l.mode}: log counts ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    const calls = log.finalCalls.map((c) => `${c.id}:${c.outcome}`);
    if (!isDeepStrictEqual(calls, [`${g.expectedId}:ok`]))
      p6.push(`${l.mode}: final calls [${calls.join(', ')}], expected [${g.expectedId}:ok]`);
    if (log.turns !== 1) p6.push(`${l.mode}: ${log.turns} turns in the log, expected 1`);
  };
  expectCounts(g.direct, { schemas: g.direct.tools, searches: 0, describes: 0, codeRuns: 0 });
  expectCounts(g.tools, { schemas: 3, searches: 1, describes: 1, codeRuns: 0 });
  expectCounts(g.code, { schemas: 1, searches: 1, describes: 1, codeRuns: 1 });
  const t = g.code.codeTelemetry;
  if (t.length !== 1 || t[0]?.searchCount !== 1 || t[0]?.describeCount !== 1 || t[0]?.callCount !== 1) {
    p6.push(
      `code: bridge telemetry ${JSON.stringify(t)}, expected one run with searchCount 1, describeCount 1, callCount 1`,
    );
  }
  claim('6', p6);
  return out;
}
