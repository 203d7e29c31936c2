/**
 * A simulated node whose kubelet talks to an infrastructure server off the node (an "API
 * server" in a namespace of its own, reached from the node by its main routing table at
 * `address`:`port`), and a tenant's pod of network 2 that also holds that address in network 2's
 * namespace and answers on that port. A connection tagged into network 2 lands at the tenant; an
 * untagged one at the server. tests/infra_address_holder_test.ts and
 * tests/kube/api_server_holder_test.ts play the tenant with it.
 */
import assert from "node:assert/strict";
import { AgentWorld } from "./agent_process.ts";
import { plugin } from "./tenant_world.ts";
import { run } from "../../lib/os/process.ts";
import { PodServer } from "../../lib/demo/pod_server.ts";
import { vethInto } from "../../lib/demo/netns.ts";

/**
 * The world with the server at `address`:`port`, the tenant's pod of network 2 also there, and an
 * agent reading `dirPods` (the pods directory) and the CNI socket with `flags`, following the
 * kubelet cgroup `opts.kubeletCgroup` makes (default the world's, with its prober).
 */
export async function startInfraWorld(
  server: { address: string; port: number },
  dirPods: Record<string, unknown>[],
  flags: string[],
  opts: { kubeletCgroup?: (w: AgentWorld) => Promise<string> } = {},
) {
  const { address, port } = server;
  const w = await AgentWorld.create();
  const infra = `${w.node.netns}-infra`;
  const servers: PodServer[] = [];
  const dispose = async () => {
    for (const s of servers) await s.dispose().catch(() => {});
    await w.dispose();
    await run(["ip", "netns", "del", infra]).catch(() => {});
  };
  try {
    const node = w.node.netns, tenant = w.node.network(2);
    await run(["ip", "netns", "add", infra]);
    await run(["ip", "-n", infra, "link", "set", "lo", "up"]);
    await run(["ip", "netns", "exec", infra, "sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0"]);
    await vethInto(node, "vinfra", infra);
    await run(["ip", "-n", infra, "addr", "add", `${address}/32`, "dev", "eth0"]);
    await run(["ip", "-n", infra, "link", "set", "eth0", "up"]);
    await run(["ip", "-n", infra, "route", "add", "default", "dev", "eth0"]);
    await run(["ip", "-n", node, "link", "set", "vinfra", "up"]);
    await run(["ip", "-n", node, "route", "add", `${address}/32`, "dev", "vinfra"]);
    // Network 2's overlay routes the address to the tenant's pod, which holds it.
    await run(["ip", "-n", tenant.podNetns, "addr", "add", `${address}/32`, "dev", "eth0"]);
    await run([
      "ip",
      "-n",
      node,
      "route",
      "add",
      `${address}/32`,
      "dev",
      `vn${tenant.id}`,
      "table",
      String(tenant.table),
    ]);
    servers.push(
      await PodServer.start({
        netns: infra,
        name: "api-server",
        addresses: [address],
        tcpPorts: [port],
      }),
      await PodServer.start({
        netns: tenant.podNetns,
        name: "tenant-pod",
        addresses: [address],
        tcpPorts: [port],
      }),
    );
    const socket = `${w.podsDir}/run/cni.sock`;
    for (const pod of dirPods) await w.writePod(pod);
    const kubeletCgroup = opts.kubeletCgroup ? await opts.kubeletCgroup(w) : w.cgroups.kubelet;
    const agent = w.startAgent(
      [`--pods-dir=${w.podsDir}`, `--cni-socket=${socket}`, ...flags],
      kubeletCgroup,
    );
    await agent.ready(60_000);
    /** The kubelet's connection to the server: who answers, and with which mark. */
    const kubeletToServer = async () => {
      const res = await w.probe(address, port);
      return { body: res.body?.trim(), mark: res.mark ?? 0, res: JSON.stringify(res) };
    };
    /** The kubelet's connection to the server reaches it untagged (`context` leads a failure). */
    const assertServerUntagged = async (context = "") => {
      const to = await kubeletToServer();
      assert.equal(to.body, "api-server", `${context}${to.res}`);
      assert.equal(to.mark, 0, `${context}tagged with mark ${to.mark}: ${to.res}`);
    };
    /** The CNI ADD of the pod `name` of network 2 (named by its conf) at the server's address. */
    const addAtServer = (name: string) =>
      plugin("ADD", socket, { name, uid: `uid-${name}` }, { network: "net2", networkId: 2 }, [
        address,
      ]);
    return {
      w,
      agent,
      socket,
      kubeletToServer,
      assertServerUntagged,
      addAtServer,
      [Symbol.asyncDispose]: dispose,
    };
  } catch (e) {
    await dispose();
    throw e;
  }
}
