/**
 * The doctor's checks of CNI chaining: does the configuration the runtime
 * uses chain the lace plugin, so that new pods register at ADD rather than
 * waiting for the API to show their IP; and are the directories and files the
 * agent writes there and in its state directory root's alone, so no one else
 * can steer root's writes (the agent refuses them otherwise).
 */
import { type Check, check, type NodeSnapshot } from "./check.ts";

/**
 * The runtime's CNI configuration, as the doctor reads it, and the agent's last chaining pass,
 * as the agent says (a write that failed, a file it left alone); none for what it did not see.
 */
export function cniChecks(s: NodeSnapshot): Check[] {
  return [...configCheck(s), ...pluginCheck(s), ...agentChainingCheck(s)];
}

/**
 * The plugin a chained configuration names must be there for the runtime: an error while a
 * configuration names it (every new pod's network setup fails), a warning before.
 */
function pluginCheck(s: NodeSnapshot): Check[] {
  const p = s.cniPlugin;
  if (!p) return [];
  const naming = s.cniChaining?.naming ?? [];
  return [check(
    "cni-plugin",
    p.problem === undefined,
    p.problem === undefined
      ? `The lace plugin is in ${p.dir}, root's and executable`
      : naming.length > 0
      ? `${p.problem}; ${
        naming.join(", ")
      } name it, so every new pod's network setup on this node fails`
      : `${p.problem}; the agent chains nothing until it is there`,
    "restart the agent's pod (its install-cni init container installs the plugin) or install it by hand; docs/troubleshooting.md, CniPluginMissing",
    naming.length > 0 ? "error" : "warning",
  )];
}

function agentChainingCheck(s: NodeSnapshot): Check[] {
  const view = s.agent?.chaining;
  if (!view || view.mode !== "auto") return [];
  const problems = view.problems.map((p) => `${p.reason}: ${p.message}`);
  return [check(
    "cni-chaining-agent",
    problems.length === 0,
    problems.length === 0
      ? `The agent's last chaining pass over ${view.dir} found nothing wrong`
      : `The agent's last chaining pass over ${view.dir}: ${problems.join("; ")}`,
    "fix what each line names (the agent retries on its own, and reports each change as a Node Event); docs/cni.md lists them",
    "warning",
  )];
}

function configCheck(s: NodeSnapshot): Check[] {
  const c = s.cniChaining;
  if (!c) return [];
  const ok = c.state === "chained" || c.state === "hand-chained";
  const fix = {
    chained: "",
    "hand-chained": "",
    "not-chained":
      "run the agent with --cni-chaining=auto (the chart's node.cni.chaining, the default) or add the lace plugin by hand (docs/cni.md); until then new pods' probes wait for the API to show their IP",
    unparsable:
      "the runtime uses this file but Lace cannot chain it (the message says why): chain the lace plugin by hand (docs/cni.md), or have the network plugin write a file Lace reads",
    unusable:
      "fix or remove the file the message names (the network plugin that wrote it, or its own DaemonSet): until then the runtime gives no new pod a network",
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
