/**
 * The test network plugin's address choice (net_plugin.ts), pure: like the CNI host-local
 * plugin, each network hands out host numbers round-robin, continuing after the last one it
 * handed out, so an ADD that was refused (and released) is retried with the next address, not
 * the same one again.
 */

/** Host numbers .10 to .250 of the /24 (and ::a to ::fa of the /64). */
export const FIRST_HOST = 10;
export const LAST_HOST = 250;

/** One network's allocations: container id → host number, and the last number handed out. */
export interface Allocations {
  byContainer: Record<string, number>;
  last?: number;
}

/**
 * The host number for a new attachment: `requested` if given and free, else the first free one
 * after `last`, wrapping around; undefined when none is free (or the requested one is taken).
 */
export function chooseHost(state: Allocations, requested?: number): number | undefined {
  const used = new Set(Object.values(state.byContainer));
  if (requested !== undefined) {
    const valid = Number.isInteger(requested) && requested >= FIRST_HOST &&
      requested <= LAST_HOST;
    return valid && !used.has(requested) ? requested : undefined;
  }
  const size = LAST_HOST - FIRST_HOST + 1;
  const start = state.last === undefined ? FIRST_HOST : state.last + 1;
  for (let i = 0; i < size; i++) {
    const host = FIRST_HOST + (start - FIRST_HOST + i) % size;
    if (!used.has(host)) return host;
  }
  return undefined;
}
