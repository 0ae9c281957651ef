import type { Exposure } from '../expose/index.js';

/**
 * What the model sees, shared by every turn of every session whose policy-filtered catalog has the same
 * fingerprint and whose mode, harness and code availability are the same: in direct mode the definitions of a
 * large catalog are built and measured once, not per turn. Exposures are never changed after they are built.
 * Least recently used beyond `max`.
 */
export class ExposureMemo {
  private readonly memo = new Map<string, Exposure>();
  builds = 0;
  reuses = 0;

  constructor(private readonly max = 32) {}

  get(key: string, build: () => Exposure): Exposure {
    const hit = this.memo.get(key);
    if (hit !== undefined) {
      this.memo.delete(key);
      this.memo.set(key, hit);
      this.reuses++;
      return hit;
    }
    const made = build();
    this.builds++;
    this.memo.set(key, made);
    while (this.memo.size > this.max) {
      const oldest = this.memo.keys().next();
      if (oldest.done === true) break;
      this.memo.delete(oldest.value);
    }
    return made;
  }
}
