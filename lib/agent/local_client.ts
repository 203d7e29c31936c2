/**
 * Asking the running agent over its local socket (`--agent-socket`), the only
 * place its view of pods, addresses and networks is served. Used by
 * `lace targets` and `lace doctor`, which run as root on the node.
 */

/** GETs `path` from the agent's local socket; rejects when nothing answers within `timeoutMs`. */
export async function getFromAgent(
  socketPath: string,
  path: string,
  timeoutMs: number,
): Promise<{ status: number; body: string }> {
  using client = Deno.createHttpClient({ proxy: { transport: "unix", path: socketPath } });
  const res = await fetch(`http://localhost${path}`, {
    client,
    signal: AbortSignal.timeout(timeoutMs),
  });
  return { status: res.status, body: await res.text() };
}
