/**
 * The registered targets as `lace targets` and `lace doctor` read them: the running agent's view
 * over its root-only local socket (it knows each target's pod), else the pinned map's entries
 * (no pods) when no agent answers.
 */
import type { TargetView } from "./views.ts";
import { targetsFromAgent } from "./client.ts";

/**
 * The registered targets: the running agent's view (with pods) when it
 * answers, else the pinned map's entries (no pods). Throws when neither is
 * there, with what to do.
 */
export async function registeredTargets(
  agentSocket: string,
  pinPath: string,
): Promise<TargetView[]> {
  const fromAgent = await targetsFromAgent(agentSocket);
  if (fromAgent) return fromAgent;
  const { readPinnedTargetsWithHits } = await import("../datapath/pins.ts");
  const { hitsView } = await import("../datapath/hits.ts");
  const { monotonicNowNs } = await import("../libbpf/mod.ts");
  const entries = readPinnedTargetsWithHits(pinPath);
  const now = monotonicNowNs();
  return entries.map((e) => ({
    family: e.key.family,
    address: e.key.address,
    port: e.key.port,
    networkId: e.value.networkId,
    mark: e.value.mark,
    ...hitsView(e.hits, now),
  }));
}
