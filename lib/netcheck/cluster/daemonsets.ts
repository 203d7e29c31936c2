/**
 * The probe DaemonSets a netcheck run makes in the cluster, one per network,
 * and removes at its end.
 */
import { getLogger } from "@logtape/logtape";
import type { NetcheckCluster } from "./netcheck_cluster.ts";
import { describeError, SetupError } from "./errors.ts";
import { probeDaemonSet, type ProbeNetwork } from "./manifest.ts";
import type { NetcheckOptions } from "../options.ts";

const log = getLogger(["lace", "netcheck"]);

/**
 * Creates the probe DaemonSet of every network, pushing each onto `created`
 * before its create so that one failing half-way is still deleted. A network
 * namespace other than the run's that cannot take one is a SetupError naming it.
 */
export async function createProbeDaemonSets(
  cluster: NetcheckCluster,
  options: NetcheckOptions,
  runId: string,
  networks: ProbeNetwork[],
  created: ProbeNetwork[],
): Promise<void> {
  const multi = networks.length > 1;
  for (const network of networks) {
    // Pushed first: a create that fails half-way is still deleted (a missing one is fine).
    created.push(network);
    try {
      await cluster.applyDaemonSet(network.namespace, probeDaemonSet(options, runId, network));
    } catch (e) {
      if (!multi || network.namespace === options.namespace) throw e;
      throw new SetupError(
        `Could not create the probe DaemonSet of network "${network.name}" in namespace ` +
          `"${network.namespace}" (${describeError(e)}): --networks names namespaces that ` +
          `exist and that the network plugin maps to a network; netcheck never creates them`,
      );
    }
    log.info("Created DaemonSet {namespace}/{name}", {
      namespace: network.namespace,
      name: network.daemonSet,
    });
  }
}

/**
 * Deletes the DaemonSets a run created, at every end of the run; returns a
 * note for each one left behind, saying what to delete by hand.
 */
export async function deleteProbeDaemonSets(
  cluster: NetcheckCluster,
  created: ProbeNetwork[],
): Promise<string[]> {
  const left: string[] = [];
  for (const { namespace, daemonSet: name } of created) {
    await cluster.deleteDaemonSet(namespace, name).then(
      () => log.info("Deleted DaemonSet {namespace}/{name}", { namespace, name }),
      (e) => {
        log.error("Could not delete DaemonSet {namespace}/{name}: {error}", {
          namespace,
          name,
          error: (e as Error).message,
        });
        left.push(`Could not delete DaemonSet "${namespace}/${name}": delete it by hand`);
      },
    );
  }
  return left;
}
