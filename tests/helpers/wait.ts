/**
 * The one way tests wait for something: poll a condition until it holds or a
 * deadline passes, never a bare sleep.
 */

export interface WaitOptions {
  /** How long to wait in ms before failing; 5000 unless told. */
  timeout?: number;
  /** How long to pause between two checks in ms; 10 unless told. */
  interval?: number;
  /** What is awaited, for the timeout error: "the watch", "pod a in the map". */
  message?: string;
}

/** What a condition returns once it holds. */
export type Truthy<T> = Exclude<T, false | 0 | 0n | "" | null | undefined>;

/**
 * Polls `condition` until it returns a truthy value, and returns that value.
 * A check that throws counts as not yet; after `timeout` ms the error names
 * `message` and carries the error of the last check as its cause, when the
 * last check threw (an error from early on, say "connection refused" before a
 * server was up, would hide why it is still not ready).
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  { timeout = 5000, interval = 10, message = "a condition" }: WaitOptions = {},
): Promise<Truthy<T>> {
  const deadline = Date.now() + timeout;
  let last: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as Truthy<T>;
      last = undefined;
    } catch (error) {
      last = error;
    }
    if (Date.now() >= deadline) {
      const why = last === undefined ? "" : `: ${last instanceof Error ? last.message : last}`;
      throw new Error(`Timed out after ${timeout} ms waiting for ${message}${why}`, {
        cause: last,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
}

/**
 * Awaits `waiting`; when it fails, throws its message followed by `explain()`'s account of the
 * state then (a pod's status and events, a runner's log), with the failure as the cause. A
 * timed-out wait names what it awaited; the state says why it never came. An `explain()` that
 * fails itself is named in the message rather than hiding the first failure.
 */
export async function explainFailure<T>(
  waiting: Promise<T>,
  explain: () => Promise<string>,
): Promise<T> {
  try {
    return await waiting;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const state = await explain().catch((e) =>
      `(could not say why: ${e instanceof Error ? e.message : e})`
    );
    throw new Error(`${message}\n${state}`, { cause: error });
  }
}
