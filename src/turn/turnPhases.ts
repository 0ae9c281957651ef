import { performance } from 'node:perf_hooks';
import type { Catalog } from '../catalog/index.js';
import { expose as exposeSurface, type ExposureMode } from '../expose/index.js';
import type { CatalogInfo, ExposureSummary } from '../../machines/index.js';
import { sessionPolicy, type EffectivePolicy } from '../policy/index.js';
import { SpanName } from '../telemetry/index.js';
import { catalogSize } from './catalogMemo.js';
import { bySource } from './turnView.js';
import { listTurnSources } from './sources.js';
import { traced } from './spans.js';
import type { EngineDeps, TurnRun } from './types.js';

/** resolvePolicy: the effective policy from the config layers and the session facts; `policy.resolved`. */
export function resolvePolicyPhase(deps: EngineDeps, run: TurnRun): Promise<EffectivePolicy> {
  return traced(run, SpanName.resolvePolicy, undefined, async () => {
    const policy = sessionPolicy(deps.config, run.facts);
    const approval = deps.config.tools.approval.require;
    const layers = policy.layers.map((l) => ({ name: l.name, allow: l.allow, deny: l.deny }));
    await run.events.emit(
      'policy.resolved',
      {
        layers: approval.length > 0 ? [...layers, { name: 'approval', approval }] : layers,
        ownerOnlyAllowed: policy.owner,
      },
      run.startedEventId,
    );
    return policy;
  });
}

/** listSources: every source listed, then filtered by the policy; `sources.listed` with counts and failures. */
export function listSourcesPhase(
  deps: EngineDeps,
  run: TurnRun,
  policy: EffectivePolicy,
  signal: AbortSignal,
): Promise<Catalog> {
  return traced(run, SpanName.listSources, undefined, async () => {
    const { full, sources, filtered, failures } = await listTurnSources(deps, run, policy, signal);
    await run.events.emit(
      'sources.listed',
      {
        sources: [...sources, ...failures].map((s) => ({ ...s, durationMs: Math.max(0, s.durationMs) })),
        total: catalogSize(full),
      },
      run.startedEventId,
    );
    return filtered;
  });
}

/** index: the search index of the filtered catalog, reused by fingerprint; `catalog.indexed`. */
export function indexPhase(deps: EngineDeps, run: TurnRun, catalog: Catalog): Promise<CatalogInfo> {
  return traced(run, SpanName.index, undefined, async () => {
    const started = performance.now();
    const { index, reused } = deps.indexes.get(catalog);
    await run.events.emit(
      'catalog.indexed',
      {
        catalogSize: catalogSize(catalog),
        fingerprint: catalog.fingerprint,
        bySource: bySource(catalog),
        reused,
        durationMs: performance.now() - started,
      },
      run.startedEventId,
    );
    return { size: catalogSize(catalog), fingerprint: catalog.fingerprint, cached: reused, index };
  });
}

/**
 * expose: what the model sees. Tool Search off → direct; `code` needs an available sandbox (and the OS network
 * layer when `sandbox.requireIsolation`), else it falls back to `tools` before anything is compacted, with the
 * reason; a `codex` harness gets its eligible tools directly. `tools.exposed` records mode, names and bytes.
 */
export function exposePhase(deps: EngineDeps, run: TurnRun, catalog: Catalog): Promise<ExposureSummary> {
  return traced(run, SpanName.expose, undefined, async () => {
    const mode: ExposureMode = run.requestedMode;
    let codeAvailable: { ok: true } | { ok: false; reason: string } = { ok: true };
    if (mode === 'code' && run.harness !== 'codex') {
      const sandbox = deps.opts.sandbox;
      if (sandbox === undefined) codeAvailable = { ok: false, reason: 'no sandbox is configured' };
      else {
        const a = await sandbox.available();
        if (!a.ok) codeAvailable = { ok: false, reason: a.reason };
        else if (deps.config.sandbox.requireIsolation && a.isolation.osNetwork === undefined) {
          codeAvailable = {
            ok: false,
            reason: `sandbox.requireIsolation is set but the OS network layer is missing${a.isolation.reason === undefined ? '' : ` (${a.isolation.reason})`}`,
          };
        }
      }
    }
    // Only direct exposure (asked for, or given to a codex harness) lists the catalog's tools: the compact ones are
    // the same whatever the catalog, so their key leaves the fingerprint out (a turn's client tools change it).
    const lists = mode === 'direct' || run.harness === 'codex';
    const key = `${lists ? catalog.fingerprint : 'compact'}|${mode}|${run.harness}|${codeAvailable.ok ? '' : codeAvailable.reason}`;
    const exposure =
      deps.exposures === undefined
        ? exposeSurface({ mode, entries: catalog.entries, harness: run.harness, codeAvailable })
        : deps.exposures.get(key, () =>
            exposeSurface({ mode, entries: catalog.entries, harness: run.harness, codeAvailable }),
          );
    const names = exposure.tools.map((t) => t.function.name);
    // The fold of `sources.listed`: the sources this turn runs without, told to the model with the exposure.
    const unavailableSources = run.events.state.unavailableSources;
    const fellBack = mode === 'code' && exposure.mode === 'tools';
    const harnessDirect = run.harness === 'codex' && mode !== 'direct';
    await run.events.emit(
      'tools.exposed',
      {
        mode: exposure.mode,
        tools: names,
        bytes: exposure.bytes,
        schemasUpFront: exposure.schemasUpFront,
        ...(fellBack && exposure.reason !== undefined ? { fallbackReason: exposure.reason } : {}),
        ...(harnessDirect && exposure.reason !== undefined ? { harnessReason: exposure.reason } : {}),
        ...(unavailableSources === undefined ? {} : { unavailableSources: [...unavailableSources] }),
      },
      run.startedEventId,
    );
    return {
      mode: exposure.mode,
      requestedMode: mode,
      tools: names,
      bytes: exposure.bytes,
      ...(exposure.reason === undefined ? {} : { reason: exposure.reason }),
      surface: exposure,
    };
  });
}
