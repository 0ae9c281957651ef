import { openCommandBus, openLocalEngine, type LocalEngine } from '../app/index.js';
import { ok, type Result } from '../shared/index.js';
import { str, strs } from './args.js';
import type { CliIo } from './io.js';
import { envWithNatsFlags } from './natsFlags.js';

/** A one-shot command's engine with the bus it runs on; `close()` closes both, the engine first. */
export interface CliEngine {
  local: LocalEngine;
  close(): Promise<void>;
}

/**
 * The engine of a one-shot command (`turn`, `code`) from its flags: NATS when `--nats` / `NATS_URL` names a server
 * (with `--stream-prefix` and the credential flags), else the embedded bus; the config, `--catalog`, `--plugin` and
 * `--traces-dir`; warnings go to stderr as `warning: …`. Nothing is left open on failure.
 */
export async function openCliEngine(
  v: Record<string, unknown>,
  io: CliIo,
  name: string,
  opts: { withSandbox: boolean; log?: string },
): Promise<Result<CliEngine>> {
  const nats = await openCommandBus({
    url: str(v['nats']),
    env: envWithNatsFlags(v, io.env),
    cwd: io.cwd,
    name,
    ...(str(v['stream-prefix']) === undefined ? {} : { streamPrefix: str(v['stream-prefix'])! }),
  });
  if (!nats.ok) return nats;
  const opened = await openLocalEngine({
    ...(nats.value === undefined ? {} : { bus: nats.value }),
    ...(str(v['config']) === undefined ? {} : { config: str(v['config'])! }),
    catalog: strs(v['catalog']),
    plugin: strs(v['plugin']),
    ...(opts.log === undefined ? {} : { log: opts.log }),
    ...(str(v['traces-dir']) === undefined ? {} : { tracesDir: str(v['traces-dir'])! }),
    withSandbox: opts.withSandbox,
    cwd: io.cwd,
    onWarning: (w) => io.stderr(`warning: ${w}`),
  });
  if (!opened.ok) {
    await nats.value?.close();
    return opened;
  }
  const local = opened.value;
  return ok({
    local,
    close: async () => {
      try {
        await local.close();
      } finally {
        await nats.value?.close();
      }
    },
  });
}
