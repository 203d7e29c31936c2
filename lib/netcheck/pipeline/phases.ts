/**
 * The phases a round runs over each network's pairs, in order: which pairs
 * each takes, whether it holds both endpoints for its whole run, and the
 * check it makes of one path (checks/in_pod.ts). Isolation is not among
 * them: it runs once a round, over the pairs between networks (round.ts).
 */
import {
  checkConnect,
  type CheckContext,
  checkMtu,
  measureBandwidth,
  measureLatency,
} from "../checks/in_pod.ts";
import type { PathResult, Phase } from "../checks/path_result.ts";
import type { NetworkEndpoint } from "../cluster/netcheck_cluster.ts";
import { CONNECT_PORT, type NetcheckOptions, UDP_PORT } from "../options.ts";
import type { Pair } from "../pairs/directed.ts";

/** One phase of a network's checks. */
export interface NetworkPhase {
  phase: Exclude<Phase, "isolation">;
  /** Its progress line. */
  label: string;
  /** Whether this run asked for it. */
  enabled(options: NetcheckOptions): boolean;
  /** Whose sample of pairs it tests: connectivity's peers, or bandwidth's (sampled above --sample-threshold). */
  peers: "connectivity" | "bandwidth";
  /** Only the pairs whose connect passed: on the others it would only fail again. */
  connectedOnly: boolean;
  /** Holds both endpoints for its whole run: an iperf3 server serves one client at a time. */
  exclusive: boolean;
  /** Checks one path of `network` (undefined without --networks); undefined when aborted. */
  check(
    ctx: CheckContext,
    pair: Pair<NetworkEndpoint>,
    network: string | undefined,
  ): Promise<PathResult | undefined>;
}

/** The path named after its network, which every report and metric series shows. */
function ofNetwork(
  result: Promise<PathResult | undefined>,
  network: string | undefined,
): Promise<PathResult | undefined> {
  return network === undefined ? result : result.then((found) => found && { ...found, network });
}

/** Every network's phases, in the order a round runs them. */
export const NETWORK_PHASES: readonly NetworkPhase[] = [
  {
    phase: "connect",
    label: "Connectivity",
    enabled: () => true,
    peers: "connectivity",
    connectedOnly: false,
    exclusive: false,
    check: (ctx, pair, network) =>
      checkConnect(ctx, pair, { phase: "connect", args: [], port: CONNECT_PORT, network }),
  },
  {
    phase: "latency",
    label: "Latency",
    enabled: (o) => o.latencySamples > 0,
    peers: "connectivity",
    connectedOnly: true,
    exclusive: false,
    check: (ctx, pair, network) => ofNetwork(measureLatency(ctx, pair), network),
  },
  {
    phase: "udp",
    label: "UDP",
    enabled: (o) => o.udp,
    peers: "connectivity",
    // Every pair: UDP may pass where TCP fails and the other way round.
    connectedOnly: false,
    exclusive: false,
    check: (ctx, pair, network) =>
      checkConnect(ctx, pair, { phase: "udp", args: ["--protocol=udp"], port: UDP_PORT, network }),
  },
  {
    phase: "mtu",
    label: "MTU",
    enabled: (o) => o.mtu,
    peers: "connectivity",
    connectedOnly: true,
    // Its TCP transfer and UDP datagrams go to the target's iperf3 server.
    exclusive: true,
    check: (ctx, pair, network) => ofNetwork(checkMtu(ctx, pair), network),
  },
  {
    phase: "bandwidth",
    label: "Bandwidth",
    enabled: (o) => !o.skipBandwidth,
    peers: "bandwidth",
    connectedOnly: true,
    exclusive: true,
    check: (ctx, pair, network) => ofNetwork(measureBandwidth(ctx, pair), network),
  },
];
