// A seeded pseudo-random source (mulberry32), so that a soak run's request mix and
// fault schedule replay from --seed. Not for anything cryptographic.
export class Rng {
  constructor(seed) {
    this.state = (Number(seed) >>> 0) || 0x9e3779b9;
  }

  // Returns a float in [0, 1).
  next() {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  // Returns an integer in [lo, hi] (both included).
  int(lo, hi) { return lo + Math.floor(this.next() * (hi - lo + 1)); }

  // Returns a float in [lo, hi).
  uniform(lo, hi) { return lo + this.next() * (hi - lo); }

  // Returns true with probability p.
  chance(p) { return this.next() < p; }

  // Returns one element of `items`.
  pick(items) { return items[Math.floor(this.next() * items.length)]; }

  // Returns a key of `weights` ({key: weight}) with probability proportional to its weight.
  weighted(weights) {
    const entries = Object.entries(weights).filter(([, w]) => w > 0);
    const total = entries.reduce((s, [, w]) => s + w, 0);
    let x = this.next() * total;
    for (const [k, w] of entries) {
      x -= w;
      if (x < 0) return k;
    }
    return entries.at(-1)[0];
  }

  // Returns an independent generator derived from this one (one per client loop, so that
  // the loops' draws do not depend on how their requests interleave).
  fork() { return new Rng(Math.floor(this.next() * 4294967296)); }
}
