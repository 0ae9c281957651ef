import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/catalog/index.js';

describe('sha256Hex', () => {
  it('is the sha256 of the UTF-8 text, as a Hash object gives it', () => {
    for (const text of ['', 'abc', 'überprüfe die Bestellung ✓', 'x'.repeat(70_000)])
      expect(sha256Hex(text)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
  });
});
