/**
 * Pod networks made on demand, one per namespace (the dev node of scripts/dev and the upstream
 * conformance run, whose every test makes a namespace of its own): the network plugin
 * (net_plugin.ts) puts a pod without a network label into the network named after its namespace,
 * making that network's node side (bridge, routing table, mark rules) on its first pod. Every
 * network allocates from the same ranges, so the namespaces' pods share addresses and only the
 * mark tells them apart. The assignments (name → id) live in the plugin's state directory, in a
 * file locked while used, so concurrent ADDs agree; nodes that share one file (networksFile: the
 * two-node dev node) give a namespace the same id, bridge and mark on each, and each node makes
 * the network's node side on its own first pod there.
 */
import { dirname, join } from "node:path";
import { run } from "../../lib/os/process.ts";
import { addNetworkNodeSide, type PodSubnets } from "./network.ts";
import type { NetworkSetting } from "./node_config.ts";

/**
 * The highest id a made network gets: the node's address on its bridge is 10.99.<id>.1, and the
 * mark's network bits hold it.
 */
export const MAX_NETWORK_ID = 250;

/** A Kubernetes namespace name (RFC 1123 label); anything else is no network's name. */
const NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** Network name → id of the networks made so far. */
export type Assignments = Record<string, number>;

/**
 * The network called `wanted`: a fixed one, one made before, or a new one with the next free id
 * (`isNew`, to be made and then recorded). Throws a RangeError for a name that cannot be a
 * namespace's or when every id is taken.
 */
export function assignNetwork(
  fixed: readonly NetworkSetting[],
  assigned: Assignments,
  wanted: string,
): { network: NetworkSetting; isNew: boolean } {
  const known = fixed.find((n) => n.name === wanted);
  if (known) return { network: known, isNew: false };
  if (!NAME.test(wanted)) {
    throw new RangeError(`Network name "${wanted}" is not a namespace name (RFC 1123 label)`);
  }
  const setting = (id: number) => ({ name: wanted, id, bridge: `lnet${id}` });
  const id = assigned[wanted];
  if (id !== undefined) return { network: setting(id), isNew: false };
  const used = new Set([...fixed.map((n) => n.id), ...Object.values(assigned)]);
  let next = 1;
  while (used.has(next)) next++;
  if (next > MAX_NETWORK_ID) {
    throw new RangeError(
      `Every network id up to ${MAX_NETWORK_ID} is taken; start a fresh node for more namespaces`,
    );
  }
  return { network: setting(next), isNew: true };
}

/** What the plugin's conflist entry says about its networks (see ConflistSettings). */
export interface NetworksConf {
  networks: NetworkSetting[];
  subnet4: string;
  subnet6: string;
  stateDir: string;
  /** The assignments' file, if not networks.json in stateDir (ConflistSettings.networksFile). */
  networksFile?: string;
}

/** Where `conf`'s assignments live. */
function assignmentsPath(conf: NetworksConf): string {
  return conf.networksFile ?? join(conf.stateDir, "networks.json");
}

async function withAssignments<T>(
  conf: NetworksConf,
  change: (assigned: Assignments) => Promise<T>,
): Promise<T> {
  const path = assignmentsPath(conf);
  await Deno.mkdir(dirname(path), { recursive: true });
  const file = await Deno.open(path, { read: true, write: true, create: true });
  try {
    await file.lock(true);
    const text = await Deno.readTextFile(path);
    const assigned: Assignments = text ? JSON.parse(text) : {};
    const result = await change(assigned);
    await Deno.writeTextFile(path, JSON.stringify(assigned));
    return result;
  } finally {
    file.close();
  }
}

/**
 * The network called `wanted`, its node side made here (in the node's network namespace, where
 * the plugin runs) if its bridge is not here yet (a new network, or one another node sharing the
 * assignments made). A half-made network's bridge is removed again and a new one is not
 * recorded, so the next pod's ADD tries afresh.
 */
export function namespaceNetwork(conf: NetworksConf, wanted: string): Promise<NetworkSetting> {
  return withAssignments(conf, async (assigned) => {
    const { network, isNew } = assignNetwork(conf.networks, assigned, wanted);
    // A fixed network's node side is made with the node; another's on its first pod here.
    if (conf.networks.includes(network)) return network;
    if (!await bridgeIsHere(network.bridge)) await makeNodeSide(conf, network);
    if (isNew) assigned[wanted] = network.id;
    return network;
  });
}

async function bridgeIsHere(bridge: string): Promise<boolean> {
  return await run(["ip", "link", "show", "dev", bridge]).then(() => true, () => false);
}

/** Makes `network`'s node side; a half-made one's bridge is removed again. */
async function makeNodeSide(conf: NetworksConf, network: NetworkSetting): Promise<void> {
  const subnets: PodSubnets = { v4: conf.subnet4, v6: conf.subnet6 };
  try {
    await addNetworkNodeSide((...args) => run(["ip", ...args]), network, subnets);
  } catch (error) {
    await run(["ip", "link", "del", network.bridge]).catch(() => {});
    throw new Error(`Could not make the node side of network ${network.name}: ${error}`, {
      cause: error,
    });
  }
}

/** Every network's name: the fixed ones and those made so far. */
export async function networkNames(conf: NetworksConf): Promise<string[]> {
  const names = conf.networks.map((n) => n.name);
  try {
    const text = await Deno.readTextFile(assignmentsPath(conf));
    if (text) names.push(...Object.keys(JSON.parse(text) as Assignments));
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  return names;
}
