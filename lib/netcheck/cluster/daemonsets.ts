/**
 * What a netcheck run makes in the cluster and removes at its end: one probe
 * DaemonSet per network, and the Lease that keeps other runs out.
 */
import { getLogger } from "@logtape/logtape";
import type { NetcheckCluster } from "./netcheck_cluster.ts";
import { describeError, SetupError } from "./errors.ts";
import type { LeaseLock } from "./lease.ts";
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
 * Deletes the DaemonSets a run created and releases its Lease, on every end of
 * the run. A DaemonSet left behind is added to `outcome.error`; returns whether
 * anything was left (a --watch stopped by SIGTERM then exits with an error).
 */
export async function removeRunObjects(
  cluster: NetcheckCluster,
  created: ProbeNetwork[],
  lease: LeaseLock | undefined,
  outcome: { error?: string },
): Promise<boolean> {
  let leftOver = false;
  for (const { namespace, daemonSet: name } of created) {
    await cluster.deleteDaemonSet(namespace, name).then(
      () => log.info("Deleted DaemonSet {namespace}/{name}", { namespace, name }),
      (e) => {
        log.error("Could not delete DaemonSet {namespace}/{name}: {error}", {
          namespace,
          name,
          error: (e as Error).message,
        });
        leftOver = true;
        const note = `Could not delete DaemonSet "${namespace}/${name}": delete it by hand`;
        outcome.error = outcome.error ? `${outcome.error}; ${note}` : note;
      },
    );
  }
  await lease?.release().catch((e) => {
    // It expires after its duration (leaseDurationS, 60 s); a stop that left it is not a clean one.
    leftOver = true;
    log.warn("Could not release the Lease: {error}", { error: (e as Error).message });
  });
  return leftOver;
}
