/**
 * Rate limits by key: a token bucket per key, `burst` tokens, one more every
 * `refillMs`, kept in a bounded LRU so that many keys cannot grow it without
 * end (a key that falls out starts full again). Shared by the Event recorder
 * (per object) and the HTTP listeners (per peer address). Time is a parameter.
 */

export interface TokenBucketOptions {
  burst: number;
  refillMs: number;
  /** Keys kept at most; the least recently used falls out. */
  maxKeys: number;
}

export class TokenBuckets {
  readonly #opts: TokenBucketOptions;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(opts: TokenBucketOptions) {
    this.#opts = opts;
  }

  /**
   * Takes a token for `key` at `now` (ms) and returns 0, or, when there is
   * none, takes nothing and returns the ms until there is one.
   */
  take(key: string, now: number): number {
    const { burst, refillMs, maxKeys } = this.#opts;
    const bucket = this.#buckets.get(key) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + Math.max(0, now - bucket.at) / refillMs);
    bucket.at = now;
    touch(this.#buckets, key, bucket, maxKeys);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - bucket.tokens) * refillMs);
  }
}

/** A Map used as a bounded LRU: reading moves a key to the end, the oldest falls out. */
export function touch<V>(map: Map<string, V>, key: string, value: V, limit: number): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > limit) map.delete(map.keys().next().value!);
}
