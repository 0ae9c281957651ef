/**
 * CPython's `random.Random(seed).shuffle` reproduced exactly: MT19937 seeded through init_by_array with the
 * seed's 32-bit words (as CPython does for a non-negative int), `_randbelow` by rejection on `getrandbits(k)`,
 * and the Fisher-Yates loop of `shuffle` from the end. So a sample the issue defines in Python terms
 * ("random.Random(7).shuffle, the first 2,000") is the same sample here. Pure: no I/O.
 */
export class PythonRandom {
  private readonly mt = new Uint32Array(624);
  private index = 625;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed) || seed < 0)
      throw new Error(`seed must be a non-negative safe integer, got ${seed}`);
    const key: number[] = [];
    let s = seed;
    do {
      key.push(s % 0x1_0000_0000);
      s = Math.floor(s / 0x1_0000_0000);
    } while (s > 0);
    this.initByArray(key);
  }

  private initGenrand(s: number): void {
    const mt = this.mt;
    mt[0] = s >>> 0;
    for (let i = 1; i < 624; i++) {
      const prev = (mt[i - 1] as number) ^ ((mt[i - 1] as number) >>> 30);
      mt[i] = (Math.imul(1812433253, prev) + i) >>> 0;
    }
    this.index = 624;
  }

  private initByArray(key: readonly number[]): void {
    const mt = this.mt;
    this.initGenrand(19650218);
    let i = 1;
    let j = 0;
    for (let k = Math.max(624, key.length); k > 0; k--) {
      const prev = (mt[i - 1] as number) ^ ((mt[i - 1] as number) >>> 30);
      mt[i] = (((mt[i] as number) ^ Math.imul(prev, 1664525)) + (key[j] as number) + j) >>> 0;
      i++;
      j++;
      if (i >= 624) {
        mt[0] = mt[623] as number;
        i = 1;
      }
      if (j >= key.length) j = 0;
    }
    for (let k = 623; k > 0; k--) {
      const prev = (mt[i - 1] as number) ^ ((mt[i - 1] as number) >>> 30);
      mt[i] = (((mt[i] as number) ^ Math.imul(prev, 1566083941)) - i) >>> 0;
      i++;
      if (i >= 624) {
        mt[0] = mt[623] as number;
        i = 1;
      }
    }
    mt[0] = 0x80000000;
  }

  /** The next 32-bit output of MT19937 (genrand_uint32). */
  nextUint32(): number {
    const mt = this.mt;
    if (this.index >= 624) {
      for (let k = 0; k < 624; k++) {
        const y = ((mt[k] as number) & 0x80000000) | ((mt[(k + 1) % 624] as number) & 0x7fffffff);
        mt[k] = (mt[(k + 397) % 624] as number) ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
      }
      this.index = 0;
    }
    let y = mt[this.index++] as number;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** `getrandbits(k)` for 1 <= k <= 32. */
  getrandbits(k: number): number {
    return this.nextUint32() >>> (32 - k);
  }

  /** `_randbelow(n)`: a uniform integer in [0, n) by rejection, as CPython does (n < 2**32). */
  randbelow(n: number): number {
    const k = Math.floor(Math.log2(n)) + 1; // n.bit_length()
    let r = this.getrandbits(k);
    while (r >= n) r = this.getrandbits(k);
    return r;
  }

  /** `shuffle(x)` in place. */
  shuffle<T>(x: T[]): T[] {
    for (let i = x.length - 1; i > 0; i--) {
      const j = this.randbelow(i + 1);
      [x[i], x[j]] = [x[j] as T, x[i] as T];
    }
    return x;
  }
}
