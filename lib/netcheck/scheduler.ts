/**
 * Runs a task per directed pair with at most `concurrency` in flight. In
 * exclusive mode (bandwidth) a pair holds locks on both endpoints for its
 * whole run, taken in name order: each iperf3 server serves one client, and
 * the client shares its container with its own node's server, so A→B never
 * overlaps B→A and no two running pairs share an endpoint.
 *
 * Pairs are pulled lazily into a small window (memory does not grow with
 * the number of pairs). In exclusive mode each endpoint takes its pairs in
 * the order they come, the tournament rounds of `directedPairs()`: a pair
 * starts once it is the first waiting pair of both its endpoints and both are
 * free. A greedy "oldest pair whose endpoints are free" start lets the first
 * node of a round to finish grab a later pair while its next partner is about
 * to finish; that partner then idles, and the slip compounds (1.12–1.16× the
 * bound with equal sessions). In order, equal sessions run in exactly the
 * 2(N−1) rounds the locks allow. An endpoint whose next partner is still
 * behind (busy with earlier pairs) is not left idle: it may take a later pair
 * with another endpoint nobody waits for.
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

  isHeld(a: string): boolean {
    return this.#held.has(a);
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
  const windowSize = Math.max(options.window ?? Math.max(64, concurrency * 4), 1);
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

  /** Starts pairs in window order up to the concurrency bound (no locks). */
  const startFifo = () => {
    while (window.length > 0 && running.size < concurrency && !signal?.aborted) {
      start(window.shift()!);
      refill();
    }
  };

  // Reused on every turn: the schedule runs one turn per finished pair. Endpoints are marked
  // with the number of the turn that saw them, not kept in sets cleared each turn: a cleared
  // Set shrinks and grows its table again, kilobytes of garbage per finished pair (at 100
  // nodes, netcheck's peak RSS grew with it).
  let turn = 0;
  const seenIn = new Map<string, number>();
  const awaitedIn = new Map<string, number>();
  const chosen: Pair<T>[] = [];
  /**
   * Starts each pair that is the first waiting pair of both its endpoints
   * when both are free; then later pairs whose endpoints are free and not
   * awaited by such a first pair (their own next partner is still behind),
   * so a node does not idle while its partner catches up. Returns how many started.
   */
  const startExclusive = (): number => {
    turn++;
    // Marks of earlier turns mean nothing; dropped once they outnumber what one turn can mark,
    // so the maps hold the window's endpoints, not every endpoint of the run (O(N)).
    if (seenIn.size > 4 * windowSize) {
      seenIn.clear();
      awaitedIn.clear();
    }
    let room = concurrency - running.size;
    for (const pair of window) {
      const a = key(pair.from), b = key(pair.to);
      if (seenIn.get(a) !== turn && seenIn.get(b) !== turn) {
        if (room > 0 && locks.tryAcquire(a, b)) {
          chosen.push(pair);
          room--;
        } else {
          awaitedIn.set(a, turn);
          awaitedIn.set(b, turn);
        }
      }
      seenIn.set(a, turn);
      seenIn.set(b, turn);
    }
    for (let i = 0; i < window.length && room > 0; i++) {
      const a = key(window[i].from), b = key(window[i].to);
      // Pairs taken above hold their locks, so tryAcquire skips them.
      if (awaitedIn.get(a) !== turn && awaitedIn.get(b) !== turn && locks.tryAcquire(a, b)) {
        chosen.push(window[i]);
        room--;
      }
    }
    const started = chosen.length;
    if (started > 0) {
      let kept = 0;
      for (const pair of window) if (!chosen.includes(pair)) window[kept++] = pair;
      window.length = kept;
      for (const pair of chosen) start(pair);
      chosen.length = 0;
      refill();
    }
    return started;
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
      if (!exclusive) startFifo();
      else {
        // Pulling pairs into the window after starts can bring endpoints' first pairs in.
        while (running.size < concurrency && !signal?.aborted && startExclusive() > 0);
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
