import { isBusError, openNatsBus, type NatsBus } from '../bus/nats/index.js';
import { fail, ok, type Result } from '../shared/index.js';

/**
 * The NATS bus of a one-shot command (`turn --nats`, `code --nats`): `url` from the flag, else NATS_URL; a
 * comma-separated list is a cluster. Missing streams are created, existing ones keep the deployment's settings.
 * `undefined` when neither names a server (the command uses the embedded bus). Unreachable: a failure value.
 */
export async function openCommandBus(opts: { url: string | undefined; env: NodeJS.ProcessEnv; streamPrefix?: string; name: string; connectTimeoutMs?: number }): Promise<Result<NatsBus | undefined>> {
  const url = opts.url ?? (opts.env['NATS_URL']?.trim() || undefined);
  if (url === undefined) return ok(undefined);
  const servers = url.split(',').map((u) => u.trim()).filter((u) => u !== '');
  try {
    return ok(await openNatsBus({
      servers, name: opts.name, manageStreams: 'ifMissing', connectTimeoutMs: opts.connectTimeoutMs ?? 5000,
      ...(opts.streamPrefix === undefined ? {} : { streamPrefix: opts.streamPrefix }),
    }));
  } catch (err) {
    if (isBusError(err)) return fail(err.code, err.message.startsWith(`${err.code}: `) ? err.message.slice(err.code.length + 2) : err.message);
    throw err;
  }
}
