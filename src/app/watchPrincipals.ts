import { unwatchFile, watchFile, type Stats } from 'node:fs';
import { loadConfig, type Principal } from '../config/index.js';

export interface PrincipalWatch {
  close(): void;
}

/**
 * Watches the config file and hands its principals to `onChange` whenever the file changes (written in place or
 * replaced by a rename, as `toolsearch keys add|revoke` and `config set` do), so a running gateway takes key changes
 * without a restart. The file is polled (`intervalMs`, default 500): unlike fs.watch this survives the rename of an
 * atomic write and needs nothing from the platform. A file that no longer parses or validates keeps the principals
 * in force and is reported through `onWarning`. Only principals are reloaded; other keys need a restart.
 */
export function watchPrincipals(
  path: string,
  onChange: (principals: Record<string, Principal>) => void,
  opts: { intervalMs?: number; onWarning?: (message: string) => void } = {},
): PrincipalWatch {
  const listener = (cur: Stats, prev: Stats): void => {
    if (cur.mtimeMs === prev.mtimeMs && cur.ino === prev.ino && cur.size === prev.size) return;
    const loaded = loadConfig({ path });
    if (!loaded.ok) {
      opts.onWarning?.(
        `config ${path} changed but was not reloaded (the keys in force stay): ${loaded.error.code}: ${loaded.error.message}`,
      );
      return;
    }
    onChange(loaded.value.config.principals);
  };
  watchFile(path, { interval: opts.intervalMs ?? 500, persistent: false }, listener);
  return { close: () => unwatchFile(path, listener) };
}
