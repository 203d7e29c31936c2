/**
 * The tenant-isolation tests' world: the real agent process on the simulated node (two overlay
 * networks whose pods share one IPv4 and one IPv6 address) fed by the repository's test API
 * server, and what the tests read back from it (Events, metrics).
 */
import assert from "node:assert/strict";
import { TestApiServer } from "../api_server/mod.ts";
import type { KubeObject } from "../api_server/mod.ts";
import { type AgentProcess, AgentWorld, podManifest } from "./agent_process.ts";
import { waitFor } from "./wait.ts";
import { execPlugin, laceCommand } from "./cni_runtime.ts";
import { POD_IPV4, POD_IPV6 } from "./agent_process.ts";
import { ERR } from "../../lib/cni/spec.ts";

/**
 * The world, the test API server with `pods`, and an agent using both, with its
 * CNI socket; `dirPods` go to the pods directory, which the agent then also reads.
 */
export async function startTenantWorld(
  pods: Record<string, unknown>[],
  extra: string[] = [],
  dirPods: Record<string, unknown>[] = [],
  addressSharing: AgentWorld["addressSharing"] = "shared",
) {
  const w = await AgentWorld.create();
  w.addressSharing = addressSharing;
  let api: TestApiServer | undefined;
  try {
    api = await TestApiServer.start({ namespaces: ["default", "e2e", "tenant-a", "tenant-b"] });
    const socket = `${w.podsDir}/run/cni.sock`;
    // The server gives each pod its own uid, as a real one does: tests read it back.
    for (const pod of pods) {
      (pod.metadata as { uid: string }).uid = api.put(pod as unknown as KubeObject).metadata!.uid!;
    }
    for (const pod of dirPods) await w.writePod(pod);
    const agent = w.startAgent([
      `--kubeconfig=${await api.writeKubeconfig()}`,
      `--cni-socket=${socket}`,
      ...(dirPods.length ? [`--pods-dir=${w.podsDir}`] : []),
      ...extra,
    ]);
    await agent.ready(60_000);
    const server = api;
    return {
      w,
      api: server,
      agent,
      socket,
      async [Symbol.asyncDispose]() {
        await w.dispose();
        await server[Symbol.asyncDispose]();
      },
    };
  } catch (e) {
    await w.dispose();
    await api?.[Symbol.asyncDispose]();
    throw e;
  }
}

/**
 * Adds `pod` to the API a second after `older` was created: the server stamps creation times in
 * whole seconds, and the older pod must be older by its stamp, not by chance of uids.
 */
export async function putLater(
  api: TestApiServer,
  older: Record<string, unknown>,
  pod: Record<string, unknown>,
) {
  const meta = older.metadata as { namespace: string; name: string };
  const created = Date.parse(
    api.store.get(api.typeOf({ apiVersion: "v1", kind: "Pod" }), meta.namespace, meta.name)
      .metadata?.creationTimestamp as string,
  );
  await waitFor(() => Date.now() >= created + 1000, { message: "the next second" });
  (pod.metadata as { uid: string }).uid = api.put(pod as unknown as KubeObject).metadata!.uid!;
}

/** The Events the agent recorded with this reason. */
export function eventsWithReason(api: TestApiServer, reason: string) {
  return api.store.list(api.typeOf({ apiVersion: "v1", kind: "Event" }), {}).items
    .filter((e) => (e as { reason?: string }).reason === reason) as unknown as {
      involvedObject: { name: string; namespace: string };
      type: string;
      message: string;
    }[];
}

/** Waits for the agent's metric sample to reach `value`. */
export function metricReaches(agent: AgentProcess, sample: string, value: number) {
  return waitFor(async () => (await agent.metric(sample)) === value, {
    message: `${sample} = ${value}`,
  });
}

/** A pod of `networkId` in namespace `namespace`, at the simulated pods' shared addresses. */
export function tenantPod(
  name: string,
  namespace: string,
  networkId: number,
  httpPort: number,
  tcpPort: number,
  created: string,
) {
  const pod = podManifest({ name, networkId, httpPort, tcpPort, created });
  (pod.metadata as { namespace: string }).namespace = namespace;
  return pod;
}

/**
 * Runs the `lace` plugin for one command as the runtime does, chained after a network plugin;
 * `network` is what its conf names (empty: none, as on a node where annotations tell it),
 * `ifname` the interface of the pod's sandbox it attaches (Multus names a second one net1), and
 * `conf` more keys of its conf (the world's `pinPath`, which an ADD no agent answers purges).
 */
export async function plugin(
  command: "ADD" | "CHECK",
  socket: string,
  pod: { name: string; uid: string },
  network: { network: string; networkId: number } | Record<never, never>,
  ips = [POD_IPV4, POD_IPV6],
  ifname = "eth0",
  conf: Record<string, unknown> = {},
) {
  const prevResult = {
    cniVersion: "1.0.0",
    interfaces: [{ name: ifname, sandbox: "/var/run/netns/x" }],
    ips: ips.map((ip) => ({ address: `${ip}/${ip.includes(":") ? 64 : 24}`, interface: 0 })),
  };
  const run = await execPlugin(
    laceCommand(),
    {
      CNI_COMMAND: command,
      CNI_CONTAINERID: `sandbox-${pod.name}`,
      CNI_NETNS: "/var/run/netns/x",
      CNI_IFNAME: ifname,
      CNI_PATH: "/usr/lib/cni",
      CNI_ARGS: `K8S_POD_NAMESPACE=e2e;K8S_POD_NAME=${pod.name};K8S_POD_UID=${pod.uid}`,
    },
    JSON.stringify({
      cniVersion: "1.0.0",
      name: `lace-${"network" in network ? network.network : "default"}`,
      type: "lace",
      socket,
      timeout: "5s",
      ...network,
      ...conf,
      prevResult,
    }),
  );
  return { ...run, result: run.stdout ? JSON.parse(run.stdout) : undefined };
}

/** What plugin() returns: the run and its parsed CNI result. */
export type PluginRun = Awaited<ReturnType<typeof plugin>>;

/**
 * Asserts the runtime saw the ADD refused for the reason `why` matches: the plugin exits 1 with
 * CNI error 101 (which every refusal of the agent gives) and a message matching `why`. `context`
 * leads each failure's message.
 */
export function assertAddRefused(add: PluginRun, why: RegExp, context = ""): void {
  assert.equal(add.code, 1, `${context}${add.stdout}${add.stderr}`);
  assert.equal(add.result.code, ERR.addressConflict, `${context}${add.stdout}`);
  assert.match(add.result.msg, why, context);
}

/** The refusal of an ADD at an address a pod of another network (or of an unknown one) holds. */
export const HELD_BY_ANOTHER_NETWORK =
  /^Lace refused the attachment of pod \S+: Address \S+ is already used on this node by a pod of another network: /;

/** A pod of `networkId` bound to the node with no address yet: its CNI ADD comes next. */
export function podBeforeAdd(name: string, networkId: number, httpPort: number, tcpPort: number) {
  return podManifest({ name, networkId, httpPort, tcpPort, ips: [] });
}

/**
 * Asserts that the holder of both shared addresses lost its targets there to a later pod (one
 * the kubelet may probe on the holder's ports): its HTTP port on the IPv4 address and its TCP
 * port on the IPv6 one are tagged for no network, `lace_address_clashes` is 2. Returns the
 * AddressClash Events once the holder has one per address.
 */
export async function assertHolderWithdrawn(
  t: { w: AgentWorld; api: TestApiServer; agent: AgentProcess },
  holder: { name: string; httpPort: number; tcpPort: number },
) {
  const { w, api, agent } = t;
  await waitFor(async () => (await agent.metric("lace_address_clashes")) === 2, {
    timeout: 15_000,
    message: "both addresses shared with the later pod",
  });
  for (
    const [host, port, path] of [[POD_IPV4, holder.httpPort, "/"], [
      POD_IPV6,
      holder.tcpPort,
    ]] as const
  ) {
    const res = await w.probe(host, port, path);
    assert.equal(res.result, "NO_ROUTE", `${host}:${port}: ${JSON.stringify(res)}`);
  }
  return await waitFor(() => {
    const found = eventsWithReason(api, "AddressClash");
    return found.filter((e) => e.involvedObject.name === holder.name).length >= 2
      ? found
      : undefined;
  }, { message: `an AddressClash Event per address on ${holder.name}` });
}
