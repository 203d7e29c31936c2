/**
 * Runs a task per directed pair with at most `concurrency` in flight. In
 * exclusive mode (bandwidth) a pair holds locks on both endpoints for its
 * whole run, taken in name order: each iperf3 server serves one client, and
 * the client shares its container with its own node's server, so A→B never
 * overlaps B→A and no two running pairs share an endpoint. Pairs are pulled
 * lazily into a small window; the oldest runnable pair starts first.
 */
import type { Pair } from "./pairs.ts";

/** Exclusive locks on named endpoints; a pair takes both or none. */
export class EndpointLocks {
  #held = new Set<string>();

  /** Takes the locks of `a` and `b` in name order; false (holding nothing) if either is taken. */
  tryAcquire(a: string, b: string): boolean {
    const [first, second] = a < b ? [a, b] : [b, a];
    if (this.#held.has(first)) return false;
    this.#held.add(first);
    if (this.#held.has(second)) {
      this.#held.delete(first);
      return false;
    }
    this.#held.add(second);
    return true;
  }

  release(a: string, b: string): void {
    this.#held.delete(a);
    this.#held.delete(b);
  }

  get size(): number {
    return this.#held.size;
  }
}

export interface ScheduleOptions {
  concurrency: number;
  /** Hold both endpoints' locks while a pair runs. */
  exclusive: boolean;
  /** Upcoming pairs considered at once; defaults to 4 × concurrency (at least 64). */
  window?: number;
  /** Stops starting pairs; running tasks are expected to end promptly (their exec aborts). */
  signal?: AbortSignal;
}

/**
 * Runs `task` once for every pair of `pairs`. Resolves when all have run, or,
 * when `signal` aborts, once the running tasks have settled. A task that throws stops the schedule; the
 * first error is re-thrown after running tasks have settled.
 */
export async function schedulePairs<T>(
  pairs: Iterable<Pair<T>>,
  key: (endpoint: T) => string,
  task: (pair: Pair<T>) => Promise<void>,
  options: ScheduleOptions,
): Promise<void> {
  const { concurrency, exclusive, signal } = options;
  const windowSize = options.window ?? Math.max(64, concurrency * 4);
  const locks = new EndpointLocks();
  const iterator = pairs[Symbol.iterator]();
  const window: Pair<T>[] = [];
  const running = new Set<Promise<void>>();
  let exhausted = false;
  let firstError: unknown;
  let failed = false;
  // One wake-up per loop turn, fired by a finishing task or the abort. (Racing a
  // never-settling promise each turn would pile up reactions on it.)
  let wake = () => {};
  const onAbort = () => wake();
  signal?.addEventListener("abort", onAbort, { once: true });

  const refill = () => {
    while (!exhausted && window.length < windowSize) {
      const next = iterator.next();
      if (next.done) exhausted = true;
      else window.push(next.value);
    }
  };

  const start = (pair: Pair<T>) => {
    const job: Promise<void> = task(pair)
      .catch((e) => {
        if (!failed) firstError = e;
        failed = true;
      })
      .finally(() => {
        if (exclusive) locks.release(key(pair.from), key(pair.to));
        running.delete(job);
        wake();
      });
    running.add(job);
  };

  try {
    await loop();
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  await Promise.allSettled(running);
  if (failed) throw firstError;

  async function loop() {
    while (!signal?.aborted && !failed) {
      refill();
      for (let i = 0; i < window.length && running.size < concurrency;) {
        const pair = window[i];
        if (!exclusive || locks.tryAcquire(key(pair.from), key(pair.to))) {
          window.splice(i, 1);
          start(pair);
          refill();
        } else i++;
      }
      if (running.size === 0) {
        if (window.length === 0) break;
        // Nothing runs, so every lock is free: a non-empty window can always start.
        throw new Error("Scheduler found no runnable pair with all endpoints free");
      }
      await new Promise<void>((resolve) => wake = resolve);
    }
  }
}
