import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childCommand } from './childCommand.js';
import type { HostIsolation } from './detectIsolation.js';
import { LineSplitter } from './lineSplitter.js';

/** A message from the child, parsed but not yet validated. */
export type ChildMessage = Record<string, unknown> & { t?: unknown };

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Last bytes of stderr (node's own fatal messages; the guest cannot write there). */
  stderrTail: string;
  /** Set when the parent killed it for breaking the protocol. */
  protocolError?: string;
}

export interface SpawnSettings {
  host: HostIsolation;
  permissionFlag: '--permission' | '--experimental-permission';
  useOsNetwork: boolean;
  maxOldSpaceMb: number;
  maxAddressSpaceMb: number;
  maxLineBytes: number;
  /** The run's limits, sent to the child in its hello at spawn (it applies them ahead of the request). */
  limits: ChildLimits;
}

/** The limits the child enforces itself (the parent enforces its own again). */
export interface ChildLimits {
  maxLogBytes: number;
  maxResultBytes: number;
  maxArgBytes: number;
  maxCalls: number;
}

/** The first line the child reads: `{t: 'hello', limits}`. */
export const helloLine = (l: ChildLimits): string =>
  JSON.stringify({
    t: 'hello',
    limits: {
      maxLogBytes: l.maxLogBytes,
      maxResultBytes: l.maxResultBytes,
      maxArgBytes: l.maxArgBytes,
      maxCalls: l.maxCalls,
    },
  });

const STDERR_TAIL = 4096;
const DIR_PREFIX = 'toolsearch-sbx-';

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Removes temp directories left by parents that died without cleaning up (a child's directory is removed
 * when it exits, but a parent killed hard cannot). The owner's pid is part of the name.
 */
export function sweepStaleDirs(): void {
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    const owner = /^toolsearch-sbx-(\d+)-/.exec(name)?.[1];
    if (owner !== undefined && Number(owner) !== process.pid && !alive(Number(owner))) {
      rmSync(join(tmpdir(), name), { recursive: true, force: true });
    }
  }
}

/**
 * One sandbox child process: spawned with an empty environment in a fresh temp directory (removed when it
 * exits), under every isolation layer the settings allow. It holds no handle that keeps the parent alive.
 */
export class SandboxChild {
  readonly ready: Promise<boolean>;
  readonly exited: Promise<ChildExit>;
  #proc: ChildProcess;
  #cwd: string;
  #isReady = false;
  #killed = false;
  #exit: ChildExit | undefined;
  #stderr = '';
  #protocolError: string | undefined;
  #onMessage: ((m: ChildMessage, lineLength: number) => void) | undefined;

  constructor(settings: SpawnSettings) {
    this.#cwd = mkdtempSync(join(tmpdir(), `${DIR_PREFIX}${process.pid}-`));
    const { host } = settings;
    const cmd = childCommand({
      nodePath: host.nodePath,
      entry: host.entry,
      cwd: this.#cwd,
      permissionFlag: settings.permissionFlag,
      maxOldSpaceMb: settings.maxOldSpaceMb,
      wrapper: settings.useOsNetwork ? host.wrapper : { kind: 'none' },
      ...(host.prlimit !== undefined && settings.maxAddressSpaceMb > 0
        ? { addressSpace: { prlimit: host.prlimit, mb: settings.maxAddressSpaceMb } }
        : {}),
    });
    // Its own process group, so kill() reaches the wrapper's pid-namespace init too (see kill()).
    this.#proc = spawn(cmd.file, cmd.args, {
      env: {},
      cwd: this.#cwd,
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    let resolveReady!: (ok: boolean) => void;
    this.ready = new Promise((r) => (resolveReady = r));
    this.exited = new Promise((resolve) => {
      const done = (code: number | null, signal: NodeJS.Signals | null) => {
        if (this.#exit !== undefined) return;
        this.#exit = {
          code,
          signal,
          stderrTail: this.#stderr,
          ...(this.#protocolError !== undefined ? { protocolError: this.#protocolError } : {}),
        };
        rmSync(this.#cwd, { recursive: true, force: true });
        resolveReady(false);
        resolve(this.#exit);
      };
      // 'close' comes after the child's stdout has been read to the end: a result written just before a normal
      // exit is still delivered. 'exit' can arrive first on a loaded machine, so it only arms a fallback for a
      // pipe held open by something else.
      this.#proc.on('close', done);
      this.#proc.on('exit', (code, signal) => {
        setTimeout(() => done(code, signal), 2000).unref();
      });
      this.#proc.on('error', (e) => {
        this.#stderr += `spawn failed: ${e.message}`;
        done(null, null);
      });
    });
    const lines = new LineSplitter(
      settings.maxLineBytes,
      (line) => this.#handleLine(line, resolveReady),
      () => this.#breakProtocol(`sent a line longer than ${settings.maxLineBytes} bytes`),
    );
    this.#proc.stdout?.on('data', (chunk: Buffer) => lines.push(chunk));
    this.#proc.stderr?.on('data', (chunk: Buffer) => {
      this.#stderr = (this.#stderr + chunk.toString('utf8')).slice(-STDERR_TAIL);
    });
    // A broken pipe to a dying child is expected; its exit reports what happened.
    this.#proc.stdin?.on('error', () => {});
    // Written now, read by the child when it starts: the child answers `ready` only after it.
    this.#proc.stdin?.write(`${helloLine(settings.limits)}\n`);
    this.#unref();
  }

  get isReady(): boolean {
    return this.#isReady;
  }

  get hasExited(): boolean {
    return this.#exit !== undefined;
  }

  /** Route the child's messages (after `ready`) to one run, with the length of the line each came in; undefined: none. */
  listen(onMessage: ((m: ChildMessage, lineLength: number) => void) | undefined): void {
    this.#onMessage = onMessage;
  }

  send(line: string): void {
    if (this.#exit !== undefined || this.#proc.stdin?.writable !== true) return;
    this.#proc.stdin.write(`${line}\n`);
  }

  /**
   * SIGKILL to the whole process group: the wrapper and the init of its pid namespace (bwrap and unshare fork
   * one). When that init dies the kernel kills everything in the namespace, node included. Killing only the
   * wrapper is not enough: right after a spawn, its init may not yet have set its parent-death signal.
   */
  kill(): void {
    if (this.#exit !== undefined || this.#killed) return;
    this.#killed = true;
    // Held until the exit is seen, so the temp directory is removed even if the parent is about to finish.
    this.#proc.ref();
    const pid = this.#proc.pid;
    try {
      if (pid === undefined) throw new Error('not spawned');
      process.kill(-pid, 'SIGKILL');
    } catch {
      this.#proc.kill('SIGKILL');
    }
  }

  #breakProtocol(why: string): void {
    this.#protocolError ??= why;
    this.kill();
  }

  #handleLine(line: string, resolveReady: (ok: boolean) => void): void {
    let m: unknown;
    try {
      m = JSON.parse(line);
    } catch {
      return this.#breakProtocol('sent a line that is not JSON');
    }
    if (m === null || typeof m !== 'object' || Array.isArray(m))
      return this.#breakProtocol('sent a message that is not an object');
    const message = m as ChildMessage;
    if (!this.#isReady) {
      if (message.t !== 'ready') {
        const detail = message.t === 'fatal' && typeof message['message'] === 'string' ? `: ${message['message']}` : '';
        return this.#breakProtocol(`did not start${detail}`);
      }
      this.#isReady = true;
      resolveReady(true);
      return;
    }
    if (this.#onMessage === undefined) return this.#breakProtocol('spoke before it was given a run');
    this.#onMessage(message, line.length);
  }

  /** Pooled children must not keep the parent's event loop alive; a run keeps it alive with its own timer. */
  #unref(): void {
    this.#proc.unref();
    for (const stream of [this.#proc.stdin, this.#proc.stdout, this.#proc.stderr]) {
      (stream as unknown as { unref?: () => void } | null)?.unref?.();
    }
  }

  /** For the runner: a protocol violation seen while serving a run. */
  fail(why: string): void {
    this.#breakProtocol(why);
  }
}
