/**
 * The doctor's checks of CNI chaining: does the configuration the runtime
 * uses chain the lace plugin, so that new pods register at ADD rather than
 * waiting for the API to show their IP; and are the directories and files the
 * agent writes there and in its state directory root's alone, so no one else
 * can steer root's writes (the agent refuses them otherwise).
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
  const problems = c.problems ?? [];
  return [
    check("cni-chaining", ok, c.message, fix, "warning"),
    check(
      "cni-files",
      problems.length === 0,
      problems.length === 0
        ? "the CNI configuration and the chaining state are root's alone"
        : problems.join("; "),
      "make each directory named root's and writable by no one else, and each file a regular " +
        "file that is root's and writable by no one else; the agent writes nothing through them " +
        "until then (a refused state record is dropped at its next write)",
      "error",
    ),
  ];
}
