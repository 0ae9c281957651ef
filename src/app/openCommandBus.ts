import {
  approverSubjectOf,
  busConnectOptions,
  isBusError,
  natsConnectSettings,
  openNatsBus,
  scrubSecrets,
  type NatsBus,
} from '../bus/nats/index.js';
import type { ResolvedConfig } from '../config/index.js';
import { fail, ok, type Result } from '../shared/index.js';

/**
 * The NATS bus of a one-shot command (`turn --nats`, `code --nats`): `url` from the flag, else NATS_URL; a
 * comma-separated list is a cluster. Credentials from the environment (NATS_USER, NATS_PASSWORD, NATS_TOKEN,
 * NATS_NKEY, NATS_CA/CERT/KEY: the CLI puts its --nats-* flags there) and config `nats.*`; never printed.
 * Missing streams are created, existing ones keep the deployment's settings; a principal of a secured deployment
 * leaves the streams alone. `undefined` when neither names a server (the command uses the embedded bus).
 * Unreachable or refused: a failure value.
 */
export async function openCommandBus(opts: {
  url: string | undefined;
  env: NodeJS.ProcessEnv;
  streamPrefix?: string;
  name: string;
  connectTimeoutMs?: number;
  cwd?: string;
  config?: ResolvedConfig['nats'];
  /** An approver's bus: its `approval.resolved` facts go under its own key's token (`approverSubjectOf`). */
  approver?: boolean;
}): Promise<Result<NatsBus | undefined>> {
  // Config nats.url does not switch a command to NATS by itself: the flag or NATS_URL does.
  const { url: _configUrl, ...credentials } = opts.config ?? {};
  const settings = natsConnectSettings({
    url: opts.url,
    env: opts.env,
    ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
    ...(opts.config === undefined ? {} : { config: credentials }),
  });
  if (!settings.ok) return settings;
  const c = settings.value;
  if (c === undefined) return ok(undefined);
  try {
    return ok(
      await openNatsBus({
        ...busConnectOptions(c),
        name: opts.name,
        manageStreams: c.principal === 'default' ? 'ifMissing' : false,
        connectTimeoutMs: opts.connectTimeoutMs ?? 5000,
        ...(opts.approver === true ? { subjectOf: approverSubjectOf(c.principal) } : {}),
        ...(opts.streamPrefix === undefined ? {} : { streamPrefix: opts.streamPrefix }),
      }),
    );
  } catch (err) {
    if (isBusError(err)) {
      const m = scrubSecrets(err.message, c.secrets);
      return fail(err.code, m.startsWith(`${err.code}: `) ? m.slice(err.code.length + 2) : m);
    }
    throw err;
  }
}
