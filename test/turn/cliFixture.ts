import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CliIo } from '../../src/cli/io.js';
import { PLUGIN_SOURCE } from './fixture.js';

export interface CapturedIo extends CliIo {
  out: string[];
  err: string[];
  lastJson(): any;
}

export function captureIo(cwd: string): CapturedIo {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    cwd,
    env: {},
    stdout: (s) => out.push(s),
    stderr: (s) => err.push(s),
    lastJson: () => JSON.parse(out[out.length - 1] ?? 'null'),
  };
}

/** A temp folder with the demo plugin, a snapshot catalog and a config denying secret_* and asking approval for deploys. */
export function cliDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ts-cli-'));
  writeFileSync(join(dir, 'demo.mjs'), PLUGIN_SOURCE);
  writeFileSync(
    join(dir, 'weather.json'),
    JSON.stringify({
      name: 'weather',
      tools: [
        {
          name: 'get_forecast',
          description: 'Get the weather forecast for a city.',
          inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
        {
          name: 'get_alerts',
          description: 'Get weather alerts for a US state.',
          inputSchema: { type: 'object', properties: { state: { type: 'string' } } },
        },
      ],
    }),
  );
  writeFileSync(
    join(dir, 'toolsearch.config.json5'),
    `{ tools: { deny: ['secret_*'], toolSearch: { mode: 'tools' } }, plugins: ['./demo.mjs'], log: { path: 'events.jsonl' } }`,
  );
  return dir;
}
