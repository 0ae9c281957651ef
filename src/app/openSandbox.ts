import type { ResolvedConfig } from '../config/index.js';
import { createSandbox, type Sandbox } from '../sandbox/index.js';

/** How long closing waits for the sandbox's children to exit before it lets them go. */
export const SANDBOX_CLOSE_BOUND_MS = 5000;

/** The local sandbox sized by config `sandbox.*`; `poolSize` 0 for one-shot commands (no warm children). */
export function openSandbox(config: ResolvedConfig, opts: { poolSize?: number } = {}): Sandbox {
  const s = config.sandbox;
  return createSandbox({
    poolSize: opts.poolSize ?? s.poolSize,
    maxOldSpaceMb: s.maxOldSpaceMb,
    requireIsolation: s.requireIsolation,
    maxLogBytes: s.maxLogBytes,
    maxResultBytes: s.maxResultBytes,
  });
}
