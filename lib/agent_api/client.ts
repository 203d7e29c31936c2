/**
 * Asking the running agent over its local socket (`--agent-socket`), the only
 * place its view of pods, addresses and networks is served. Used by
 * `lace targets` and `lace doctor`, which run as root on the node.
 */
import type { AddressesView, TargetView } from "./views.ts";

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

/** Reads the agent's /targets from its local socket; undefined when no agent answers in time. */
export async function targetsFromAgent(
  socketPath: string,
  timeoutMs = 1000,
): Promise<TargetView[] | undefined> {
  if (!socketPath) return undefined;
  try {
    const res = await getFromAgent(socketPath, "/targets", timeoutMs);
    return res.status === 200 ? JSON.parse(res.body) as TargetView[] : undefined;
  } catch {
    return undefined;
  }
}

/** The agent's /addresses; undefined when no agent answers (or an older one without it). */
export async function addressesFromAgent(socketPath: string): Promise<AddressesView | undefined> {
  if (!socketPath) return undefined;
  try {
    const res = await getFromAgent(socketPath, "/addresses", 1000);
    return res.status === 200 ? JSON.parse(res.body) as AddressesView : undefined;
  } catch {
    return undefined;
  }
}
