import { performance } from 'node:perf_hooks';
import type { Catalog } from '../catalog/index.js';
import { expose as exposeSurface, type ExposureMode } from '../expose/index.js';
import type { CatalogInfo, Exposure as MachineExposure } from '../../machines/index.js';
import { sessionPolicy, type EffectivePolicy } from '../policy/index.js';
import { SpanName } from '../telemetry/index.js';
import { bySource } from './codeRun.js';
import { listTurnSources } from './sources.js';
import { traced } from './spans.js';
import type { EngineDeps, TurnState } from './types.js';

/** resolvePolicy: the effective policy from the config layers and the session facts; `policy.resolved`. */
export function resolvePolicyPhase(deps: EngineDeps, ts: TurnState): Promise<EffectivePolicy> {
  return traced(ts, SpanName.resolvePolicy, undefined, async () => {
    const policy = sessionPolicy(deps.config, ts.facts);
    const approval = deps.config.tools.approval.require;
    const layers = policy.layers.map((l) => ({ name: l.name, allow: l.allow, deny: l.deny }));
    await ts.events.emit('policy.resolved', {
      layers: approval.length > 0 ? [...layers, { name: 'approval', approval }] : layers,
      ownerOnlyAllowed: policy.owner,
    }, ts.startedEventId);
    return policy;
  });
}

/** listSources: every source listed, then filtered by the policy; `sources.listed` with counts and failures. */
export function listSourcesPhase(deps: EngineDeps, ts: TurnState, policy: EffectivePolicy, signal: AbortSignal): Promise<Catalog> {
  return traced(ts, SpanName.listSources, undefined, async () => {
    const { full, filtered, failures } = await listTurnSources(deps, ts, policy, signal);
    const unavailable = [...full.sources, ...failures].filter((s) => !s.ok).map((s) => ({ key: s.key, reason: (s.reason ?? 'unavailable').slice(0, 300) }));
    if (unavailable.length > 0) ts.unavailableSources = unavailable;
    await ts.events.emit('sources.listed', {
      sources: [...full.sources, ...failures].map((s) => ({ ...s, durationMs: Math.max(0, s.durationMs) })),
      total: full.entries.length,
    }, ts.startedEventId);
    ts.catalog = filtered;
    ts.byId = new Map(filtered.entries.map((e) => [e.id, e]));
    return filtered;
  });
}

/** index: the search index of the filtered catalog, reused by fingerprint; `catalog.indexed`. */
export function indexPhase(deps: EngineDeps, ts: TurnState, catalog: Catalog): Promise<CatalogInfo> {
  return traced(ts, SpanName.index, undefined, async () => {
    const started = performance.now();
    const { index, reused } = deps.indexes.get(catalog);
    ts.index = index;
    await ts.events.emit('catalog.indexed', {
      catalogSize: catalog.entries.length, fingerprint: catalog.fingerprint, bySource: bySource(ts), reused, durationMs: performance.now() - started,
    }, ts.startedEventId);
    return { size: catalog.entries.length, fingerprint: catalog.fingerprint, cached: reused };
  });
}

/**
 * expose: what the model sees. Tool Search off → direct; `code` needs an available sandbox (and the OS network
 * layer when `sandbox.requireIsolation`), else it falls back to `tools` before anything is compacted, with the
 * reason; a `codex` harness gets its eligible tools directly. `tools.exposed` records mode, names and bytes.
 */
export function exposePhase(deps: EngineDeps, ts: TurnState, catalog: Catalog): Promise<MachineExposure> {
  return traced(ts, SpanName.expose, undefined, async () => {
    const mode: ExposureMode = ts.requestedMode;
    let codeAvailable: { ok: true } | { ok: false; reason: string } = { ok: true };
    if (mode === 'code' && ts.harness !== 'codex') {
      const sandbox = deps.opts.sandbox;
      if (sandbox === undefined) codeAvailable = { ok: false, reason: 'no sandbox is configured' };
      else {
        const a = await sandbox.available();
        if (!a.ok) codeAvailable = { ok: false, reason: a.reason };
        else if (deps.config.sandbox.requireIsolation && a.isolation.osNetwork === undefined) {
          codeAvailable = { ok: false, reason: `sandbox.requireIsolation is set but the OS network layer is missing${a.isolation.reason === undefined ? '' : ` (${a.isolation.reason})`}` };
        }
      }
    }
    const key = `${catalog.fingerprint}|${mode}|${ts.harness}|${codeAvailable.ok ? '' : codeAvailable.reason}`;
    const exposure = deps.exposures === undefined
      ? exposeSurface({ mode, entries: catalog.entries, harness: ts.harness, codeAvailable })
      : deps.exposures.get(key, () => exposeSurface({ mode, entries: catalog.entries, harness: ts.harness, codeAvailable }));
    ts.exposure = exposure;
    const names = exposure.tools.map((t) => t.function.name);
    const fellBack = mode === 'code' && exposure.mode === 'tools';
    const harnessDirect = ts.harness === 'codex' && mode !== 'direct';
    await ts.events.emit('tools.exposed', {
      mode: exposure.mode, tools: names, bytes: exposure.bytes, schemasUpFront: exposure.schemasUpFront,
      ...(fellBack && exposure.reason !== undefined ? { fallbackReason: exposure.reason } : {}),
      ...(harnessDirect && exposure.reason !== undefined ? { harnessReason: exposure.reason } : {}),
      ...(ts.unavailableSources === undefined ? {} : { unavailableSources: ts.unavailableSources }),
    }, ts.startedEventId);
    return {
      mode: exposure.mode, requestedMode: mode, tools: names, bytes: exposure.bytes,
      ...(exposure.reason === undefined ? {} : { reason: exposure.reason }), definitions: exposure.tools,
    };
  });
}
