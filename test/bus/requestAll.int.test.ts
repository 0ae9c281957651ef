// requestAll against a real nats-server, with a responder in another process: a reply that reached the socket while
// the asker's event loop was busy past the grace is still counted.
import { spawn, type ChildProcess } from 'node:child_process';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestAll } from '../../src/bus/nats/requestAll.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';

let server: NatsServer;
let nc: NatsConnection;
let child: ChildProcess | undefined;

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
}, 60_000);

afterAll(async () => {
  child?.kill('SIGKILL');
  await nc?.close();
  await server?.close();
});

const reply = (v: unknown) => new TextEncoder().encode(JSON.stringify({ ok: true, value: v }));

/** A responder in its own process: it replies `{who: 'far'}` 100 ms after each request and prints "ready" once subscribed. */
async function farResponder(url: string): Promise<ChildProcess> {
  const code = `
    import { connect } from '@nats-io/transport-node';
    const nc = await connect({ servers: ${JSON.stringify(url)} });
    nc.subscribe('t.list', { callback: (_e, m) => setTimeout(() => m.respond(JSON.stringify({ ok: true, value: { who: 'far' } })), 100) });
    await nc.flush();
    console.log('ready');
  `;
  const c = spawn(process.execPath, ['--input-type=module', '-e', code], {
    cwd: process.cwd(),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the responder did not start within 20 s')), 20_000);
    c.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    c.once('exit', (code) => reject(new Error(`the responder exited with ${code}`)));
  });
  return c;
}

describe('requestAll', () => {
  it('counts a reply that arrived while the event loop was blocked past the grace', async () => {
    child = await farResponder(server.url);
    const near = nc.subscribe('t.list', { callback: (_e, m) => void m.respond(reply({ who: 'near' })) });
    await nc.flush();
    let blocked = false;
    const replies = await requestAll(
      nc,
      't.list',
      {},
      {
        maxWaitMs: 10_000,
        graceMs: 50,
        enough: (r) => {
          // After the first reply, something else holds the loop for 600 ms: the far reply comes in meanwhile.
          if (!blocked) {
            blocked = true;
            setImmediate(() => {
              const until = Date.now() + 600;
              while (Date.now() < until);
            });
          }
          return r.length >= 1;
        },
      },
    );
    near.unsubscribe();
    expect((replies as Array<{ who: string }>).map((r) => r.who).sort()).toEqual(['far', 'near']);
  }, 60_000);
});
