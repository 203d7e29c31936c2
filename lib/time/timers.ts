/**
 * Time as a parameter: everything in Lace that waits, retries or expires
 * takes a `Timers`, so its unit tests run on fake time (a
 * `@sinonjs/fake-timers` clock through tests/helpers/fake_time.ts) instead of
 * sleeping.
 */

/** The timer functions and clock a component uses. */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
  /** Milliseconds on a clock that never goes back; only differences mean anything. */
  now(): number;
}

/** The process's own timers and monotonic clock. */
export const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id as number),
  now: () => performance.now(),
};

/** Resolves after `ms` on `timers`, or at once (without error) when `signal` aborts. */
export function sleep(timers: Timers, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      timers.clearTimeout(id);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const id = timers.setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Settles as `promise` does, or rejects with Error(`${what} got no answer in ${ms} ms`) once
 * `ms` pass on `timers` first. The promise itself runs on: there is nothing to cancel it with.
 */
export function within<T>(
  timers: Timers,
  promise: Promise<T>,
  ms: number,
  what: string,
): Promise<T> {
  let id: unknown;
  const expired = new Promise<never>((_, reject) => {
    id = timers.setTimeout(() => reject(new Error(`${what} got no answer in ${ms} ms`)), ms);
  });
  return Promise.race([promise, expired]).finally(() => timers.clearTimeout(id));
}

/**
 * Lets timers and I/O run between two slices of long work on the agent's one
 * thread: a timer of 0 ms. Deno polls sockets only when its thread waits; a
 * resolved promise, setImmediate() or a MessageChannel never waits, so a
 * loopback health probe waits behind every slice separated by them, where this
 * timer lets it through between two.
 */
export function yieldToEventLoop(timers: Timers = realTimers): Promise<void> {
  return sleep(timers, 0);
}

/**
 * Long work on the agent's one thread cut into slices of `ms` on the clock
 * `now`: work while `spent()` is false, then let the event loop run and
 * `start()` the next slice. The first slice starts when it is made.
 */
export class TimeSlice {
  #began: number;
  constructor(readonly ms: number, readonly now: () => number = () => performance.now()) {
    this.#began = now();
  }
  start(): void {
    this.#began = this.now();
  }
  spent(): boolean {
    return this.now() - this.#began >= this.ms;
  }
}

/**
 * Runs `steps` to its end, letting the event loop run (`pause`) whenever
 * `slice` is spent between two steps; gives the steps' result. A step itself
 * is not cut: each must be short.
 */
export async function runInSlices<T>(
  steps: Iterator<unknown, T, void>,
  slice: TimeSlice,
  pause: () => Promise<void> = yieldToEventLoop,
): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (slice.spent()) {
      await pause();
      slice.start();
    }
  }
}
