import type { ResolvedConfig } from '../config/index.js';
import { natsConnectSettings, type NatsConnectSettings } from '../bus/nats/index.js';
import type { Result } from '../shared/index.js';
import { str } from './args.js';
import type { CliIo } from './io.js';

/** The credential flags every command with `--nats URL` takes (passwords and tokens only from env or config). */
export const NATS_FLAG_OPTIONS = {
  'nats-nkey': { type: 'string' },
  'nats-user': { type: 'string' },
  'nats-tls-ca': { type: 'string' },
  'nats-tls-cert': { type: 'string' },
  'nats-tls-key': { type: 'string' },
} as const;

export { NATS_FLAG_HELP } from './usage.js';

/**
 * The NATS connection settings of a command: `--nats` (or `url`), the credential flags, the environment, then config
 * `nats.*`. `undefined` when no server is named. Pure but for reading the seed and TLS files.
 */
export function natsSettingsFromCli(
  values: Record<string, unknown>,
  io: Pick<CliIo, 'env' | 'cwd'>,
  config?: ResolvedConfig['nats'],
  url?: string,
): Result<NatsConnectSettings | undefined> {
  const v = (k: string) => str(values[k] as string | undefined);
  const tls = {
    ...(v('nats-tls-ca') === undefined ? {} : { ca: v('nats-tls-ca')! }),
    ...(v('nats-tls-cert') === undefined ? {} : { cert: v('nats-tls-cert')! }),
    ...(v('nats-tls-key') === undefined ? {} : { key: v('nats-tls-key')! }),
  };
  return natsConnectSettings({
    url: url ?? v('nats'),
    flags: {
      ...(v('nats-nkey') === undefined ? {} : { nkeyFile: v('nats-nkey')! }),
      ...(v('nats-user') === undefined ? {} : { user: v('nats-user')! }),
      ...(Object.keys(tls).length === 0 ? {} : { tls }),
    },
    // Config nats.url does not switch a command to NATS by itself: --nats or NATS_URL does.
    ...(config === undefined
      ? {}
      : {
          config: {
            ...(config.user === undefined ? {} : { user: config.user }),
            ...(config.password === undefined ? {} : { password: config.password }),
            ...(config.token === undefined ? {} : { token: config.token }),
            ...(config.nkeyFile === undefined ? {} : { nkeyFile: config.nkeyFile }),
            ...(config.tls === undefined ? {} : { tls: config.tls }),
          },
        }),
    env: io.env,
    cwd: io.cwd,
  });
}

/** The environment with the credential flags in it (a flag wins over its variable), for code that reads `env`. Pure: no I/O. */
export function envWithNatsFlags(values: Record<string, unknown>, env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  const set = (flag: string, name: string) => {
    const v = str(values[flag] as string | undefined);
    if (v !== undefined) out[name] = v;
  };
  set('nats-nkey', 'NATS_NKEY');
  set('nats-user', 'NATS_USER');
  set('nats-tls-ca', 'NATS_CA');
  set('nats-tls-cert', 'NATS_CERT');
  set('nats-tls-key', 'NATS_KEY');
  return out;
}
