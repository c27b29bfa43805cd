/**
 * Stripe's second limiter (docs/decisions.md §8): how many requests of one key this web process is
 * working on at once. The per-minute limit bounds how often a key may ask; this bounds how much
 * memory and how many pool connections it can hold at one moment (a page of 100 large invoices
 * is tens of megabytes until it is written out).
 */
export class ConcurrencyLimiter {
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly max: number) {}

  /** A release function when there is room for one more request of `key`, null when there is not. */
  acquire(key: string): (() => void) | null {
    const current = this.inFlight.get(key) ?? 0;
    if (current >= this.max) return null;
    this.inFlight.set(key, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inFlight.get(key) ?? 1) - 1;
      if (left === 0) this.inFlight.delete(key);
      else this.inFlight.set(key, left);
    };
  }
}
