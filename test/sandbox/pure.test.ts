import { describe, expect, it } from 'vitest';
import { childCommand, nodeFlags } from '../../src/sandbox/childCommand.js';
import { LineSplitter } from '../../src/sandbox/lineSplitter.js';
import { exitError } from '../../src/sandbox/runOnChild.js';

describe('LineSplitter', () => {
  const collect = (max: number) => {
    const lines: string[] = [];
    let overflows = 0;
    const s = new LineSplitter(
      max,
      (l) => lines.push(l),
      () => (overflows += 1),
    );
    return { s, lines, overflows: () => overflows };
  };

  it('joins lines split across chunks, including multi-byte characters cut in half', () => {
    const { s, lines } = collect(100);
    const bytes = Buffer.from('{"a":"é"}\n{"b":2}\n{"c"');
    s.push(bytes.subarray(0, 7));
    s.push(bytes.subarray(7));
    s.push(Buffer.from(':3}\n'));
    expect(lines).toEqual(['{"a":"é"}', '{"b":2}', '{"c":3}']);
  });

  it('refuses a line longer than the cap once, and drops everything after it', () => {
    const { s, lines, overflows } = collect(10);
    s.push(Buffer.from('short\n'));
    s.push(Buffer.from('x'.repeat(8)));
    s.push(Buffer.from('x'.repeat(8)));
    s.push(Buffer.from('\nlater\n'));
    expect(lines).toEqual(['short']);
    expect(overflows()).toBe(1);
  });
});

describe('childCommand', () => {
  const base = {
    nodePath: '/usr/bin/node',
    entry: '/app/src/sandbox/child.mjs',
    cwd: '/tmp/toolsearch-sbx-1',
    permissionFlag: '--experimental-permission' as const,
    maxOldSpaceMb: 64,
  };

  it('grants nothing but reading the entry, caps the heap and blocks string code generation', () => {
    const flags = nodeFlags(base);
    expect(flags).toContain('--experimental-permission');
    expect(flags).toContain('--allow-fs-read=/app/src/sandbox/child.mjs');
    expect(flags.filter((f) => f.startsWith('--allow-'))).toHaveLength(1);
    expect(flags).toContain('--max-old-space-size=64');
    expect(flags).toContain('--disallow-code-generation-from-strings');
  });

  it('wraps node in prlimit and bwrap with every namespace unshared and only read-only binds', () => {
    const cmd = childCommand({
      ...base,
      wrapper: { kind: 'bwrap', path: '/usr/bin/bwrap', asNobody: true },
      addressSpace: { prlimit: '/usr/bin/prlimit', mb: 1024 },
    });
    expect(cmd.file).toBe('/usr/bin/prlimit');
    expect(cmd.args.slice(0, 3)).toEqual([`--as=${1024 * 1024 * 1024}`, '--', '/usr/bin/bwrap']);
    expect(cmd.args).toEqual(
      expect.arrayContaining(['--unshare-all', '--die-with-parent', '--clearenv', '--cap-drop', 'ALL']),
    );
    expect(cmd.args).not.toContain('--bind');
    expect(cmd.args).not.toContain('--share-net');
    const node = cmd.args.indexOf('/usr/bin/node');
    expect(cmd.args[node - 1]).toBe('--');
    expect(cmd.args.slice(node + 1, -1)).toEqual(nodeFlags(base));
    expect(cmd.args.at(-1)).toBe('/app/src/sandbox/child.mjs');
  });

  it('uses unshare for the network and pid namespaces, or runs node bare when there is no OS layer', () => {
    const unshare = childCommand({ ...base, wrapper: { kind: 'unshare', path: '/usr/bin/unshare', mapRoot: false } });
    expect(unshare.file).toBe('/usr/bin/unshare');
    expect(unshare.args.slice(0, 5)).toEqual(['--net', '--pid', '--fork', '--kill-child', '--']);
    expect(childCommand({ ...base, wrapper: { kind: 'none' } }).file).toBe('/usr/bin/node');
  });
});

describe('exitError', () => {
  it('names out-of-memory, protocol breaks and other crashes', () => {
    expect(
      exitError({
        code: null,
        signal: 'SIGABRT',
        stderrTail: 'FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory',
      }).code,
    ).toBe('sandbox.outOfMemory');
    expect(
      exitError({
        code: 134,
        signal: null,
        stderrTail: "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc",
      }).code,
    ).toBe('sandbox.outOfMemory');
    expect(
      exitError({ code: null, signal: 'SIGKILL', stderrTail: '', protocolError: 'sent a line that is not JSON' }),
    ).toEqual({
      code: 'sandbox.protocolError',
      message: 'The sandbox child sent a line that is not JSON and was killed.',
    });
    expect(exitError({ code: 3, signal: null, stderrTail: '' })).toEqual({
      code: 'sandbox.crashed',
      message: 'The sandbox child ended unexpectedly (exit code 3).',
    });
  });
});
