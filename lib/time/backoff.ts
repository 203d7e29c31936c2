/**
 * Capped exponential backoff, the one definition every retry in Lace uses
 * (the reconcile scheduler, the pod watch, the Event recorder). Pure: the
 * random source is a parameter, so tests pin the jitter.
 */

export interface Backoff {
  /** Delay before the first retry, in ms. */
  initialMs: number;
  /** Cap on the delay, in ms. */
  maxMs: number;
  /**
   * The share of each delay that is random, 0..1: 0 waits exactly the doubled
   * delay; 0.5 is "equal jitter" (between half and all of it), which keeps the
   * agents of many nodes from hitting a recovering API server at once.
   */
  jitter?: number;
}

/**
 * The delay before retry number `attempt` (1, 2, ...): `initialMs` doubled
 * per earlier attempt, capped at `maxMs`, with the `jitter` share of it drawn
 * from `random` (0 ≤ random() < 1, like Math.random).
 */
export function backoffDelay(
  attempt: number,
  backoff: Backoff,
  random: () => number = Math.random,
): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.max(0, attempt - 1));
  const jitter = backoff.jitter ?? 0;
  return jitter === 0 ? base : base * (1 - jitter) + random() * base * jitter;
}
