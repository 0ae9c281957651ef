import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tracesCommand } from '../../src/cli/commands/traces.js';
import { rebuildTraceFromEvents, spansToJaeger, type JaegerFile } from '../../src/telemetry/index.js';
import { freePort, type NatsServer } from '../support/natsServer.js';
import { codeTurn, toolsTurn } from '../telemetry/rebuildEvents.js';
import { natsWithEvents, runCaptured } from './support.js';

let server: NatsServer;
const prefix = `TRACES${process.pid}`;
const events = [...toolsTurn('s-nats', 't1', 0).events, ...codeTurn('s-nats', 't2', 4000).events];

beforeAll(async () => {
  // Published turn by turn (the bus chains one turn's publishes in order); another session alongside.
  server = await natsWithEvents(prefix, [...events, ...toolsTurn('s-else', 't1', 0).events]);
});
afterAll(async () => {
  await server?.close();
});

const traces = (argv: string[]) => runCaptured(tracesCommand.run, argv, process.cwd());

describe('toolsearch traces --nats', () => {
  it('replays the session from JetStream and rebuilds the same trace as from the events', async () => {
    const r = await traces(['--session', 's-nats', '--nats', server.url, '--stream-prefix', prefix, '--out', '-']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const file = JSON.parse(r.out) as JaegerFile;
    expect(file).toEqual(JSON.parse(JSON.stringify(spansToJaeger(rebuildTraceFromEvents(events)))));
    expect(file.data).toHaveLength(2);
  });

  it('exits 1 for a session the stream does not hold', async () => {
    const r = await traces(['--session', 'nobody', '--nats', server.url, '--stream-prefix', prefix]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('traces.noEvents');
  });

  it('exits 1 with bus.unavailable when nothing listens at the URL', async () => {
    const port = await freePort();
    const r = await traces(['--session', 's-nats', '--nats', `nats://127.0.0.1:${port}`]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^bus\.unavailable: cannot connect/);
  });
});
