import type { ChildProcess } from 'node:child_process';

/**
 * Stops child processes: SIGTERM to each still running, SIGKILL to any still there after `killAfterMs`; resolves
 * once every one has exited.
 */
export function stopChildren(children: readonly ChildProcess[], killAfterMs: number): Promise<void> {
  return Promise.all(
    children.map(
      (c) =>
        new Promise<void>((r) => {
          if (c.exitCode !== null || c.signalCode !== null) return r();
          c.once('exit', () => r());
          c.kill('SIGTERM');
          setTimeout(() => c.kill('SIGKILL'), killAfterMs).unref();
        }),
    ),
  ).then(() => undefined);
}
