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
