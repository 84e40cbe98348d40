/** A small seeded random number generator (mulberry32): the same seed gives the same sequence. */

/** Random numbers from a 32-bit seed. */
export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p;
  }

  /** One of the keys, with probability proportional to its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as [K, number][];
    let r = this.next() * entries.reduce((n, [, w]) => n + w, 0);
    for (const [key, weight] of entries) {
      r -= weight;
      if (r < 0) return key;
    }
    return entries[entries.length - 1]![0];
  }

  /** A new generator whose sequence depends on this seed and `salt` only. */
  fork(salt: number): Random {
    return new Random(Math.imul(this.state ^ salt, 0x9e3779b1) ^ salt);
  }
}
