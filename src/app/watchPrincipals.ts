import { stat, statSync, type Stats } from 'node:fs';
import { loadConfig, type Principal } from '../config/index.js';

export interface PrincipalWatch {
  close(): void;
}

/** What tells one version of the file from another; a missing file is the empty string. */
const versionOf = (s: Stats | undefined): string => (s === undefined ? '' : `${s.ino}:${s.size}:${s.mtimeMs}`);

/**
 * Watches the config file and hands its principals to `onChange` whenever the file changes (written in place or
 * replaced by a rename, as `toolsearch keys add|revoke` and `config set` do), so a running gateway takes key changes
 * without a restart. The file is polled (`intervalMs`, default 500): unlike fs.watch this survives the rename of an
 * atomic write and needs nothing from the platform. The version in force is read when the watch starts, so a write
 * right after it is seen however late the first poll runs. A file that no longer parses or validates keeps the
 * principals in force and is reported through `onWarning`. Only principals are reloaded; other keys need a restart.
 */
export function watchPrincipals(
  path: string,
  onChange: (principals: Record<string, Principal>) => void,
  opts: { intervalMs?: number; onWarning?: (message: string) => void } = {},
): PrincipalWatch {
  let seen = versionOf(statSync(path, { throwIfNoEntry: false }));
  let polling = false;
  let closed = false;
  const poll = (): void => {
    if (polling) return;
    polling = true;
    stat(path, (err, s) => {
      polling = false;
      const now = versionOf(err === null ? s : undefined);
      if (closed || now === seen) return;
      seen = now;
      if (now === '') return;
      const loaded = loadConfig({ path });
      if (!loaded.ok) {
        opts.onWarning?.(
          `config ${path} changed but was not reloaded (the keys in force stay): ${loaded.error.code}: ${loaded.error.message}`,
        );
        return;
      }
      onChange(loaded.value.config.principals);
    });
  };
  const timer = setInterval(poll, opts.intervalMs ?? 500);
  timer.unref();
  return {
    close: () => {
      closed = true;
      clearInterval(timer);
    },
  };
}
