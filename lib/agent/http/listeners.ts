/**
 * The agent's listeners: the node's metrics and health server, the kubelet's health server on
 * loopback, the root-only local socket, and the CNI socket, after which Lace's plugin is
 * chained into the node's CNI conf. Each reports its accept failures and caps to the metrics;
 * the agent is not ready while a listener's accepts keep failing (EMFILE…).
 */
import type { CleanupStack } from "../../os/cleanup_stack.ts";
import type { Config } from "../../config.ts";
import type { ProbeStore } from "../../probe/key.ts";
import type { ChainingParts, RunningChaining } from "../chaining.ts";
import type { AgentCore } from "../core.ts";
import {
  startHealthServer,
  startHttpServer,
  startLocalServer,
  type StatusProvider,
} from "./surfaces.ts";
import type { Metrics } from "../metrics.ts";

/** A started listener, as the readiness asks it. */
export interface Listening {
  /** Why it takes no connections, or null while it works. */
  failure(): string | null;
}

export interface ListenerInputs {
  config: Pick<
    Config,
    | "metricsAddr"
    | "healthAddr"
    | "agentSocket"
    | "cniSocket"
    | "cniChaining"
    | "cniConfDir"
    | "cniBinDir"
    | "cniStateDir"
    | "cniChainFiles"
    | "containerRuntime"
  >;
  status: StatusProvider;
  metrics: Metrics;
  /** What CNI CHECK compares: the core's desired targets with the map itself. */
  core: AgentCore;
  store: ProbeStore;
  /** The chaining's Events, node and uninstall question. */
  chaining: Omit<ChainingParts, "metrics">;
  /** Told the chaining once it runs (for its view on the local socket). */
  onChaining?: (chaining: RunningChaining) => void;
}

/** A listener's metrics: its accept errors, whether it is failing, its refused connections. */
function reporting(metrics: Metrics, listener: string) {
  metrics.listenerFailing.set({ listener }, 0);
  return {
    onAcceptError: () => metrics.acceptErrors.inc({ listener }),
    onFailingChange: (failing: boolean) =>
      metrics.listenerFailing.set({ listener }, failing ? 1 : 0),
    onCapped: (outcome: "refused" | "evicted", cap: "connections" | "peer") =>
      metrics.listenerCapped.inc({ listener, cap, outcome }),
  };
}

/**
 * Starts the listeners `config` names, each stop pushed onto `parts`, and returns them for the
 * readiness. The CNI socket listens before the chaining starts, so a pod chained to Lace finds
 * the agent listening.
 */
export async function startListeners(
  inputs: ListenerInputs,
  parts: CleanupStack,
): Promise<Listening[]> {
  const { config, status, metrics } = inputs;
  const listeners: Listening[] = [];
  // The node listener serves metrics and health only; the pods, addresses and networks the
  // agent knows are served on the root-only local socket alone.
  if (config.metricsAddr) {
    const http = startHttpServer(config.metricsAddr, status, reporting(metrics, "http"));
    parts.push(() => http.shutdown());
    listeners.push(http);
  }
  // The kubelet's probes of the agent: loopback only, out of reach of pods in their own networks.
  if (config.healthAddr) {
    const health = startHealthServer(config.healthAddr, status, reporting(metrics, "health"));
    parts.push(() => health.shutdown());
    listeners.push(health);
  }
  if (config.agentSocket) {
    const local = await startLocalServer(config.agentSocket, status, reporting(metrics, "local"));
    parts.push(() => local.shutdown());
    listeners.push(local);
  }
  if (config.cniSocket) {
    const { startCniServer } = await import("../../cni/server.ts");
    const { cniHandlerFor } = await import("../../cni/check.ts");
    const cni = await startCniServer(
      config.cniSocket,
      cniHandlerFor(inputs.core, inputs.store),
      reporting(metrics, "cni"),
    );
    parts.push(() => cni.close());
    listeners.push(cni);
    const { startChaining } = await import("../chaining.ts");
    const chaining = startChaining(config, { ...inputs.chaining, metrics });
    parts.push(() => chaining.stop());
    inputs.onChaining?.(chaining);
  }
  return listeners;
}
