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
 * to finish; that partner then idles, and the slip compounds well past the
 * bound with equal sessions. In order, equal sessions run in exactly the
 * 2(N−1) rounds the locks allow. An endpoint whose next partner is still
 * behind (busy with earlier pairs) is not left idle: it may take a later pair
 * with another endpoint nobody waits for.
 */
import type { Pair } from "./directed.ts";

/**
 * Exclusive locks on endpoints numbered densely from 0 (EndpointSlots); a
 * pair takes both or none. A flag per endpoint in a typed array, not a Set
 * of names: a Set that gains and loses an entry per session rebuilds its
 * table every few dozen sessions, garbage that outlived young collections.
 */
export class EndpointLocks {
  #held = new Uint8Array(64);
  #size = 0;

  /** Takes the locks of `a` and `b`; false (holding nothing) if either is taken. */
  tryAcquire(a: number, b: number): boolean {
    if (a === b || this.isHeld(a) || this.isHeld(b)) return false;
    const top = Math.max(a, b);
    if (top >= this.#held.length) this.#held = grown(this.#held, top);
    this.#held[a] = 1;
    this.#held[b] = 1;
    this.#size += 2;
    return true;
  }

  release(a: number, b: number): void {
    this.#release(a);
    this.#release(b);
  }

  #release(e: number): void {
    if (this.isHeld(e)) {
      this.#held[e] = 0;
      this.#size--;
    }
  }

  isHeld(a: number): boolean {
    return a < this.#held.length && this.#held[a] === 1;
  }

  get size(): number {
    return this.#size;
  }
}

/** `array` copied into one of at least twice its length that holds index `top`. */
function grown<A extends Uint8Array | Int32Array>(array: A, top: number): A {
  let length = array.length * 2;
  while (length <= top) length *= 2;
  const bigger = new (array.constructor as new (n: number) => A)(length);
  bigger.set(array);
  return bigger;
}

/**
 * Endpoint keys numbered densely in order of first sight, for one schedule:
 * the locks and turn marks are indexed by these numbers. The map gains an
 * entry per endpoint once and never loses one (O(endpoints), no churn).
 */
class EndpointSlots {
  #of = new Map<string, number>();

  slot(key: string): number {
    let slot = this.#of.get(key);
    if (slot === undefined) {
      slot = this.#of.size;
      this.#of.set(key, slot);
    }
    return slot;
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
  const slots = new EndpointSlots();
  const slotOf = (endpoint: T) => slots.slot(key(endpoint));
  const iterator = pairs[Symbol.iterator]();
  const window: Pair<T>[] = [];
  // A count, not a Set of the running tasks' promises (a Set that gains and loses an entry per
  // task rebuilds its table every few dozen tasks).
  let running = 0;
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
    running++;
    task(pair)
      .catch((e) => {
        if (!failed) firstError = e;
        failed = true;
      })
      .finally(() => {
        if (exclusive) locks.release(slotOf(pair.from), slotOf(pair.to));
        running--;
        wake();
      });
  };

  /** Starts pairs in window order up to the concurrency bound (no locks). */
  const startFifo = () => {
    while (window.length > 0 && running < concurrency && !signal?.aborted) {
      start(window.shift()!);
      refill();
    }
  };

  // Reused on every turn: the schedule runs one turn per finished pair. Endpoints are marked
  // with the number of the turn that saw them, not kept in sets cleared each turn: a cleared
  // Set shrinks and grows its table again, kilobytes of garbage per finished pair. The marks
  // are typed arrays indexed by endpoint slot: maps of names, cleared once they outgrow the
  // window, are rebuilt every few hundred sessions in a large cluster, old-generation garbage.
  let turn = 0;
  let seenIn = new Int32Array(64);
  let awaitedIn = new Int32Array(64);
  const chosen: Pair<T>[] = [];
  /**
   * Starts each pair that is the first waiting pair of both its endpoints
   * when both are free; then later pairs whose endpoints are free and not
   * awaited by such a first pair (their own next partner is still behind),
   * so a node does not idle while its partner catches up. Returns how many started.
   */
  const startExclusive = (): number => {
    turn++;
    let room = concurrency - running;
    for (const pair of window) {
      const a = slotOf(pair.from), b = slotOf(pair.to);
      const top = Math.max(a, b);
      if (top >= seenIn.length) {
        seenIn = grown(seenIn, top);
        awaitedIn = grown(awaitedIn, top);
      }
      if (seenIn[a] !== turn && seenIn[b] !== turn) {
        if (room > 0 && locks.tryAcquire(a, b)) {
          chosen.push(pair);
          room--;
        } else {
          awaitedIn[a] = turn;
          awaitedIn[b] = turn;
        }
      }
      seenIn[a] = turn;
      seenIn[b] = turn;
    }
    for (let i = 0; i < window.length && room > 0; i++) {
      const a = slotOf(window[i].from), b = slotOf(window[i].to);
      // Pairs taken above hold their locks, so tryAcquire skips them.
      if (awaitedIn[a] !== turn && awaitedIn[b] !== turn && locks.tryAcquire(a, b)) {
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
    // Tasks never reject here (start() catches), so settling means counting down.
    while (running > 0) await new Promise<void>((resolve) => wake = resolve);
  } finally {
    signal?.removeEventListener("abort", onAbort);
  }
  if (failed) throw firstError;

  async function loop() {
    while (!signal?.aborted && !failed) {
      refill();
      if (!exclusive) startFifo();
      else {
        // Pulling pairs into the window after starts can bring endpoints' first pairs in.
        while (running < concurrency && !signal?.aborted && startExclusive() > 0);
      }
      if (running === 0) {
        if (window.length === 0) break;
        // Nothing runs, so every lock is free: a non-empty window can always start.
        throw new Error("Scheduler found no runnable pair with all endpoints free");
      }
      await new Promise<void>((resolve) => wake = resolve);
    }
  }
}
