/**
 * The doctor's check of CNI chaining: does the configuration the runtime
 * uses chain the lace plugin, so that new pods register at ADD rather than
 * waiting for the API to show their IP.
 */
import { type Check, check, type NodeSnapshot } from "./check.ts";

/** One check of the runtime's CNI configuration; none when the snapshot did not look. */
export function cniChecks(s: NodeSnapshot): Check[] {
  const c = s.cniChaining;
  if (!c) return [];
  const ok = c.state === "chained" || c.state === "hand-chained";
  const fix = {
    chained: "",
    "hand-chained": "",
    "not-chained":
      "run the agent with --cni-chaining=auto (the chart's node.cni.chaining, the default) or add the lace plugin by hand (docs/cni.md); until then new pods' probes wait for the API to show their IP",
    unparsable:
      "fix the file (the network plugin that wrote it, or its own DaemonSet): the runtime cannot use it either, and the agent never rewrites a file it cannot parse",
    "no-config": "install the pod network plugin; the agent chains into its file once it is there",
    unreadable:
      "check --cni-conf-dir (LACE_CNI_CONF_DIR, the chart's node.cni.confDir) and that it is mounted into the agent's container",
  }[c.state];
  return [check("cni-chaining", ok, c.message, fix, "warning")];
}
