import type { Result } from '../shared/index.js';

/** Which isolation layers this host offers, found by actually starting node under each. */
export interface IsolationReport {
  /** The Node flag that turns the permission model on; undefined means code mode is unavailable. */
  permissionFlag: '--permission' | '--experimental-permission' | undefined;
  /** The OS layer that cuts the network; undefined means the child shares the host network. */
  osNetwork: 'bwrap' | 'unshare' | undefined;
  /** Address-space cap (RLIMIT_AS via prlimit) applied to the child; undefined when prlimit is missing. */
  addressSpaceCap: 'prlimit' | undefined;
  /** Why a layer is missing, for the log and the fallback to tools mode. */
  reason?: string;
}

/**
 * What the guest's `tools.*` reach. Arguments come from hostile code as parsed JSON (any shape): validating
 * them is the implementer's job. `signal` aborts when the run settles (result, error, timeout or abort).
 * `search` answers `{results, matched, catalogSize}`; the guest sees only `results` (an array).
 */
export interface Bridge {
  search(query: unknown, opts: unknown, signal?: AbortSignal): Promise<Result<unknown>>;
  describe(id: unknown, signal?: AbortSignal): Promise<Result<unknown>>;
  call(id: unknown, args: unknown, signal?: AbortSignal): Promise<Result<unknown>>;
}

export interface LogLine {
  level: 'log' | 'warn' | 'error';
  text: string;
}

export interface CodeTelemetry {
  searchCount: number;
  describeCount: number;
  callCount: number;
  /** Request to outcome, including acquiring a child. */
  durationMs: number;
  /** True when the child came from the warm pool. */
  pooled: boolean;
}

/**
 * Error codes: sandbox.timedOut, sandbox.crashed, sandbox.outOfMemory, sandbox.guestError (the body threw or
 * does not compile), sandbox.neverSettled (the body awaits something that cannot settle), sandbox.unavailable,
 * sandbox.resultNotSerializable, sandbox.aborted (the request's signal), sandbox.protocolError (the child
 * broke the protocol: killed).
 */
export type CodeOutcome =
  | { ok: true; value: unknown; logs: LogLine[]; telemetry: CodeTelemetry }
  | { ok: false; error: { code: string; message: string }; logs: LogLine[]; telemetry: CodeTelemetry };

export interface RunRequest {
  body: string;
  timeoutMs: number;
  bridge: Bridge;
  signal?: AbortSignal;
}

export interface SandboxOptions {
  /** Warm children started ahead of time (default 2; 0 disables the pool). */
  poolSize?: number;
  /** V8 old-space cap of the child, MiB (default 64). */
  maxOldSpaceMb?: number;
  /** Address-space cap of the child, MiB (default 1024; applied with prlimit when available; 0 disables). */
  maxAddressSpaceMb?: number;
  /** Make the sandbox unavailable unless the OS network layer works (default false). */
  requireIsolation?: boolean;
  /** Total log bytes kept per run (default 64 KiB); the rest is dropped with a `[logs truncated]` line. */
  maxLogBytes?: number;
  /** Size of the result's JSON (default 256 KiB); beyond it values are cut with `…[truncated N bytes]`. */
  maxResultBytes?: number;
  /** Size of one bridge call's arguments as JSON (default 1 MiB); larger calls reject with sandbox.argsTooLarge. */
  maxArgBytes?: number;
  /** Bridge calls per run (default 1000); further calls reject with sandbox.tooManyCalls. */
  maxCalls?: number;
  /** Bridge calls in flight at once (default 16); more wait in line. */
  maxConcurrentCalls?: number;
  /** Isolation to use instead of probing (tests); by default `detectIsolation()`. */
  isolation?: IsolationReport;
}

export interface Sandbox {
  /** Whether code mode can run here; `reason` says what is missing (fall back to tools mode). */
  available(): Promise<
    { ok: true; isolation: IsolationReport } | { ok: false; reason: string; isolation: IsolationReport }
  >;
  /** Acquire a child, run the body on it, kill it. Never rejects: failures are outcomes. */
  run(req: RunRequest): Promise<CodeOutcome>;
  /** Resolves when every pooled child is started and waiting (for startup readiness and benchmarks). */
  warmUp(): Promise<void>;
  /** Kill the pooled children and refuse further runs. */
  close(): Promise<void>;
}
