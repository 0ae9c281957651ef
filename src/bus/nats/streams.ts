import {
  DiscardPolicy,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
  type StreamConfig,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { retryUntil } from '../../shared/index.js';
import { BusError } from './errors.js';
import { COMMAND_SUBJECT_PREFIX, EVENT_SUBJECT_PREFIX, GATEWAY_SUBJECT_PREFIX, TURN_MARKER_ROOT } from './subjects.js';

export type Retention = 'limits' | 'interest' | 'workqueue';

export interface StreamSettings {
  /** Prepended to the stream names (tests use a random one). */
  streamPrefix: string;
  replicas: number;
  /** 0 = keep forever. */
  maxAgeMs: number;
  /** Size limit of the event streams in bytes (oldest discarded first); 0 or absent = no limit. */
  maxBytes?: number;
  duplicateWindowMs: number;
  retention: Retention;
  /** Max age of the command stream (0 = the default, one hour): commands hold message and argument content. */
  commandMaxAgeMs?: number;
}

/** How long an unconsumed command stays in GATEWAY_COMMANDS by default (taken commands go at once: work queue). */
export const DEFAULT_COMMAND_MAX_AGE_MS = 3_600_000;

export interface StreamNames {
  events: string;
  sessions: string;
  turns: string;
  /** `gateway.cmd.>`: requests to run something, kept only until a gateway took them. */
  commands: string;
}

/** Pure: no I/O. */
export function streamNames(prefix: string): StreamNames {
  return {
    events: `${prefix}TOOLSEARCH_EVENTS`,
    sessions: `${prefix}GATEWAY_SESSIONS`,
    turns: `${prefix}TOOLSEARCH_TURNS`,
    commands: `${prefix}GATEWAY_COMMANDS`,
  };
}

const retentionPolicy = (r: Retention): RetentionPolicy =>
  r === 'interest' ? RetentionPolicy.Interest : r === 'workqueue' ? RetentionPolicy.Workqueue : RetentionPolicy.Limits;

/** The four stream configurations. Pure: no I/O. */
export function streamConfigs(s: StreamSettings): Partial<StreamConfig>[] {
  const n = streamNames(s.streamPrefix);
  const commandAge =
    s.commandMaxAgeMs === undefined || s.commandMaxAgeMs <= 0 ? DEFAULT_COMMAND_MAX_AGE_MS : s.commandMaxAgeMs;
  const common = {
    storage: StorageType.File,
    num_replicas: s.replicas,
    max_age: nanos(s.maxAgeMs),
    duplicate_window: nanos(s.duplicateWindowMs),
    discard: DiscardPolicy.Old,
  };
  const sized = s.maxBytes !== undefined && s.maxBytes > 0 ? { max_bytes: s.maxBytes } : { max_bytes: -1 };
  return [
    {
      ...common,
      ...sized,
      name: n.events,
      subjects: [`${EVENT_SUBJECT_PREFIX}.>`],
      retention: retentionPolicy(s.retention),
    },
    {
      ...common,
      ...sized,
      name: n.sessions,
      subjects: [`${GATEWAY_SUBJECT_PREFIX}.>`],
      retention: retentionPolicy(s.retention),
    },
    // One marker per (turn, seq), kept once: the compare-and-set target of the per-turn writer guard.
    {
      ...common,
      name: n.turns,
      subjects: [`${TURN_MARKER_ROOT}.>`],
      retention: RetentionPolicy.Limits,
      max_msgs_per_subject: 1,
    },
    // Commands carry chat messages and tool arguments: a work queue (a command is gone once a gateway acked it) with a
    // bounded age for those nobody took. The facts of what happened keep digests and sizes in TOOLSEARCH_EVENTS.
    {
      ...common,
      name: n.commands,
      subjects: [`${COMMAND_SUBJECT_PREFIX}.>`],
      retention: RetentionPolicy.Workqueue,
      max_age: nanos(commandAge),
      duplicate_window: nanos(Math.min(s.duplicateWindowMs, commandAge)),
    },
  ];
}

const STREAM_NAME_IN_USE = 10058;
const STREAM_NOT_FOUND = 10059;
const SUBJECTS_OVERLAP = 10065;

/**
 * Creates or updates the streams, idempotently (with `ifMissing`, existing streams are left as they are). Retries transient failures (no JetStream yet, no meta
 * leader in a starting cluster) until `deadline`; a configuration the server refuses is reported at once.
 */
export async function ensureStreams(
  jsm: JetStreamManager,
  s: StreamSettings,
  deadline: number,
  ifMissing = false,
): Promise<void> {
  for (const cfg of streamConfigs(s)) {
    try {
      await retryUntil(
        async () => {
          try {
            await addOrUpdate(jsm, cfg, ifMissing);
          } catch (e) {
            if (e instanceof JetStreamApiError && e.status === 400) {
              const hint =
                e.code === SUBJECTS_OVERLAP
                  ? `: another stream already takes ${cfg.subjects?.join(', ')}; delete it or open the bus with that stream's prefix`
                  : '';
              throw new BusError('bus.streamConfig', `stream ${cfg.name} cannot be created: ${e.message}${hint}`, {
                cause: e,
              });
            }
            throw e;
          }
        },
        // The last attempt starts at least 250 ms before the deadline (the first pause is 100 ms).
        { deadline: deadline - 150, retryIf: (e) => !(e instanceof BusError), firstPauseMs: 100, maxPauseMs: 1000 },
      );
    } catch (e) {
      if (e instanceof BusError) throw e;
      throw new BusError('bus.unavailable', `could not create stream ${cfg.name}: ${describe(e)}`, { cause: e });
    }
  }
}

async function addOrUpdate(jsm: JetStreamManager, cfg: Partial<StreamConfig>, ifMissing: boolean): Promise<void> {
  const name = cfg.name ?? '';
  let existing: StreamConfig | undefined;
  try {
    existing = (await jsm.streams.info(name)).config;
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === STREAM_NOT_FOUND)) throw e;
  }
  if (existing === undefined) {
    try {
      await jsm.streams.add({ ...cfg, name });
      return;
    } catch (e) {
      // Another process created it meanwhile: fall through to the update check.
      if (!(e instanceof JetStreamApiError && e.code === STREAM_NAME_IN_USE)) throw e;
      existing = (await jsm.streams.info(name)).config;
    }
  }
  // A one-shot client keeps the deployment's settings (replicas, max age) as they are.
  if (ifMissing) return;
  const wanted = { ...existing, ...cfg } as StreamConfig;
  if (sameConfig(existing, wanted)) return;
  if (existing.retention !== wanted.retention || existing.storage !== wanted.storage) {
    throw new BusError(
      'bus.streamConfig',
      `stream ${name} exists with retention ${existing.retention}/storage ${existing.storage}, wanted ${wanted.retention}/${wanted.storage}; ` +
        `the server cannot change these: delete the stream or keep its settings`,
    );
  }
  try {
    await jsm.streams.update(name, wanted);
  } catch (e) {
    if (e instanceof JetStreamApiError && e.status === 400) {
      throw new BusError('bus.streamConfig', `stream ${name} cannot be updated: ${e.message}`, { cause: e });
    }
    throw e;
  }
}

function sameConfig(a: StreamConfig, b: StreamConfig): boolean {
  return (
    JSON.stringify(a.subjects) === JSON.stringify(b.subjects) &&
    a.num_replicas === b.num_replicas &&
    a.max_age === b.max_age &&
    a.duplicate_window === b.duplicate_window &&
    (a.max_bytes ?? -1) === (b.max_bytes ?? -1) &&
    (a.max_msgs_per_subject ?? -1) === (b.max_msgs_per_subject ?? -1)
  );
}

export function describe(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}
