/**
 * Which pod `lace kubectl` execs into among the agent pods the API lists on a node (pure; the
 * listing is kubectl_agent.ts's).
 */

/** What pod selection reads of a Pod. */
export interface AgentPod {
  namespace: string;
  name: string;
  node: string;
  phase: string;
  ready: boolean;
  deleting: boolean;
  /** The agent container's state: running, waiting or terminated. */
  agentRunning: boolean;
  created: number;
}

/**
 * The agent pod to exec into among `pods` (the selector's pods on `node`, in one namespace or
 * all): one namespace's, running, not being deleted, Ready first, then the newest (during a
 * rollout the old pod is deleted while the new one starts). Throws an Error saying what to do
 * when there is none, or when agents of two installs run there.
 */
export function chooseAgentPod(pods: AgentPod[], node: string, where: string): AgentPod {
  const onNode = pods.filter((p) => p.node === node);
  if (onNode.length === 0) {
    throw new Error(
      `no Lace agent pod on node ${JSON.stringify(node)} ${where}: check the node's name ` +
        "(kubectl get nodes), that the DaemonSet runs there (kubectl get daemonset -A -l " +
        "app.kubernetes.io/name=lace: a taint it does not tolerate, a nodeSelector), or give " +
        "--namespace and --selector for an install with other names",
    );
  }
  const namespaces = [...new Set(onNode.map((p) => p.namespace))].sort();
  if (namespaces.length > 1) {
    throw new Error(
      `Lace agent pods of ${namespaces.length} installs run on node ${JSON.stringify(node)} ` +
        `(namespaces ${namespaces.join(", ")}): give --namespace`,
    );
  }
  const usable = onNode.filter((p) => !p.deleting && p.phase === "Running" && p.agentRunning);
  if (usable.length === 0) {
    const states = onNode.map((p) => `${p.name} ${p.deleting ? "terminating" : p.phase}`);
    throw new Error(
      `the Lace agent pod on node ${JSON.stringify(node)} is not running (${states.join(", ")}): ` +
        `see why with kubectl describe pod -n ${namespaces[0]} ${onNode[0].name}`,
    );
  }
  usable.sort((a, b) => Number(b.ready) - Number(a.ready) || b.created - a.created);
  return usable[0];
}
