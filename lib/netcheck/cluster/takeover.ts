/**
 * What a run that stopped without cleaning up (killed, OOM, its node lost) left behind: its probe
 * DaemonSets, named after its run id, with which its Lease's holder begins. The run that takes
 * that expired Lease over with the same --namespace and --networks (the chart's runner restarted
 * by its Deployment, an operator re-running the same command) deletes them, so probe pods of dead
 * runs never pile up on every node.
 */
import type { NetcheckCluster } from "./netcheck_cluster.ts";
import { probeNetworks } from "./manifest.ts";
import type { NetcheckOptions } from "../options.ts";

/** The run id a Lease holder names ("<run id> by <user>@<host>", or the run id alone). */
export function runIdOfHolder(holder: string): string | undefined {
  return /^([0-9a-f]{8})(?: |$)/.exec(holder)?.[1];
}

/**
 * Deletes the probe DaemonSets of the run that held the expired Lease as `staleHolder`; writes
 * a line saying what it did, or what is left to delete by hand.
 */
export async function removeStaleRun(
  cluster: NetcheckCluster,
  options: Pick<NetcheckOptions, "namespace" | "networks">,
  staleHolder: string,
  write: (line: string) => void,
): Promise<void> {
  const runId = runIdOfHolder(staleHolder);
  if (!runId) return;
  const left: string[] = [];
  for (const { namespace, daemonSet } of probeNetworks(options, runId)) {
    try {
      await cluster.deleteDaemonSet(namespace, daemonSet);
    } catch (e) {
      left.push(`"${namespace}/${daemonSet}" (${(e as Error).message})`);
    }
  }
  write(
    `Took over the expired Lease of run "${staleHolder}": ` +
      (left.length === 0
        ? "deleted the probe DaemonSets it left\n"
        : `could not delete its DaemonSet(s) ${left.join(", ")}: delete them by hand\n`),
  );
}
