/** Polling for the real node, whose start and steps are measured in seconds, not milliseconds. */

/** Resolves after ms. */
export const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls check every 250 ms until it returns a truthy value, which it returns; throws after
 * timeoutMs with the last error check threw. For the node's start and the tests on it.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    await delay(250);
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}: ${last ?? ""}`);
}
