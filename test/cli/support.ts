import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../src/cli/main.js';
import type { CliIo } from '../../src/cli/io.js';
import { openNatsBus, type NatsBusOptions } from '../../src/bus/nats/index.js';
import type { Envelope } from '../../src/events/index.js';
import { startNatsServer, type NatsServer } from '../support/natsServer.js';

export interface Captured {
  code: number;
  out: string;
  err: string;
  lines: string[];
  lastJson: () => any;
}

/** Runs a CLI entry (runCli or one command's run) in-process with its own io and captures what it prints. */
export async function runCaptured(
  run: (argv: string[], io: CliIo) => Promise<number>,
  argv: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
): Promise<Captured> {
  let out = '';
  let err = '';
  const code = await run(argv, {
    stdout: (s) => {
      out += s.endsWith('\n') ? s : `${s}\n`;
    },
    stderr: (s) => {
      err += s.endsWith('\n') ? s : `${s}\n`;
    },
    cwd,
    env,
  });
  const lines = out.trim().split('\n');
  return { code, out, err, lines, lastJson: () => JSON.parse(lines.at(-1) ?? 'null') };
}

/** Runs the CLI in-process and captures what it prints. */
export const cli = (argv: string[], cwd: string): Promise<Captured> => runCaptured(runCli, argv, cwd);

/** A temp folder with MCP tools/list snapshots in the catalog snapshot shape. */
export function snapshotDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'toolsearch-cli-'));
  const tool = (name: string, description: string, props: Record<string, unknown> = {}) => ({
    name,
    description,
    inputSchema: { type: 'object', properties: props, required: Object.keys(props) },
  });
  writeFileSync(
    join(dir, 'github.json'),
    JSON.stringify({
      name: 'github',
      tools: [
        tool('list_issues', 'List issues in a GitHub repository', {
          owner: { type: 'string' },
          repo: { type: 'string' },
        }),
        tool('create_issue', 'Create a new issue in a GitHub repository', { title: { type: 'string' } }),
        tool('search', 'Search code on GitHub'),
      ],
    }),
  );
  writeFileSync(
    join(dir, 'gitlab.json'),
    JSON.stringify({
      name: 'gitlab',
      tools: [
        tool('list_branches', 'List the branches of a GitLab project', { project: { type: 'string' } }),
        tool('search', 'Search GitLab projects'),
      ],
    }),
  );
  writeFileSync(
    join(dir, 'calendar.json'),
    JSON.stringify({
      name: 'calendar',
      tools: [
        tool('delete_event', 'Delete a calendar event', { eventId: { type: 'string' } }),
        tool('create_event', 'Create a calendar event with a title and time'),
      ],
    }),
  );
  return dir;
}

/**
 * A JetStream nats-server holding `events`, published in the given order under `streamPrefix` by one bus
 * (`bus`: more bus options, e.g. the subjects an approver publishes on); the bus is closed before it returns.
 */
export async function natsWithEvents(
  streamPrefix: string,
  events: Iterable<Envelope>,
  bus: Omit<NatsBusOptions, 'url' | 'streamPrefix'> = {},
): Promise<NatsServer> {
  const server = await startNatsServer({ jetstream: true });
  try {
    const b = await openNatsBus({ ...bus, url: server.url, streamPrefix });
    try {
      for (const e of events) await b.publish(e);
    } finally {
      await b.close();
    }
  } catch (e) {
    await server.close();
    throw e;
  }
  return server;
}
