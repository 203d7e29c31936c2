/**
 * A tenant's pod at one of the node's own addresses, played against the real agent process
 * running in the simulated node's namespace (as the chart runs it on the host network): a
 * system daemon on the host network answers at the node's addresses, where the kubelet probes
 * host-network pods, and the tenant's CNI result (a Multus static IP on an interface chained
 * with `lace`) names the node's address for its pod, whose probes use the daemon's ports. Were
 * the ADD accepted, the kubelet's probes of the system daemon would be tagged into the tenant's
 * network (the tenant would then decide whether the daemon is healthy); so the host holds its
 * addresses against every network, under both sharing modes, at attach and in the reconcile.
 */
import assert from "node:assert/strict";
import {
  type AgentProcess,
  agentTestOptions,
  AgentWorld,
  POD_IPV4,
  POD_IPV6,
  podManifest,
} from "./helpers/agent_process.ts";
import { hostAddressSourceCheck } from "../lib/doctor/agent_checks.ts";
import { metricReaches, plugin, podBeforeAdd } from "./helpers/tenant_world.ts";
import { simNodeAddresses } from "../lib/demo/netns.ts";
import { run } from "../lib/os/process.ts";
import { PodServer } from "../lib/demo/pod_server.ts";
import type { AddressesView } from "../lib/agent_api/views.ts";
import { waitFor } from "./helpers/wait.ts";
import { CgroupTree } from "./helpers/cgroup_fixture.ts";
import { Prober } from "../lib/prober/mod.ts";

/** The simulated node's own addresses on its link into network 1. */
const NODE = simNodeAddresses(1);
const HTTP_PORT = 8081, TCP_PORT = 9001;

/** The tenant's pod in network 2, probed on the daemon's ports, at `ips` (default the sim pods'). */
const tenantAt = (ips?: string[]) =>
  podManifest({
    name: "tenant",
    networkId: 2,
    httpPort: HTTP_PORT,
    tcpPort: TCP_PORT,
    ...(ips ? { ips } : {}),
  });

interface HostWorldOptions {
  /** The agent runs in a namespace of its own, not the node's (the kubelet's). */
  agentInOwnNetns?: boolean;
  /** More agent flags. */
  extra?: string[];
  /** Makes the kubelet cgroup the agent follows (default the world's, with its prober). */
  kubeletCgroup?: (w: AgentWorld) => Promise<string>;
}

/**
 * The world with a system daemon on the node's host network answering at the node's own
 * addresses on the tenant pod's probe ports, and an agent in the node's namespace reading
 * `dirPods` (the pods' specs; the API's part) and the CNI socket.
 */
async function startHostWorld(
  dirPods: Record<string, unknown>[],
  sharing: "exclusive" | "shared",
  opts: HostWorldOptions = {},
) {
  const w = await AgentWorld.create();
  let agentNetns: string | undefined;
  try {
    if (opts.agentInOwnNetns) {
      // A namespace of the test's own, with loopback only: not the kubelet's (the node's).
      agentNetns = `${w.node.netns}-agent`;
      await run(["ip", "netns", "add", agentNetns]);
      await run(["ip", "-n", agentNetns, "link", "set", "lo", "up"]);
    }
    const daemon = await PodServer.start({
      netns: w.node.netns,
      name: "system-daemon",
      addresses: [NODE.ipv4, NODE.ipv6],
      httpPorts: [HTTP_PORT],
      tcpPorts: [TCP_PORT],
    });
    const socket = `${w.podsDir}/run/cni.sock`;
    for (const pod of dirPods) await w.writePod(pod);
    const kubeletCgroup = opts.kubeletCgroup ? await opts.kubeletCgroup(w) : w.cgroups.kubelet;
    const agent = w.startAgent(
      [
        "--no-kube-api",
        `--pods-dir=${w.podsDir}`,
        `--cni-socket=${socket}`,
        `--address-sharing=${sharing}`,
        ...opts.extra ?? [],
      ],
      kubeletCgroup,
      { netns: agentNetns ?? w.node.netns },
    );
    await agent.ready(60_000);
    return {
      w,
      agent,
      socket,
      async [Symbol.asyncDispose]() {
        await daemon.dispose();
        await w.dispose();
        if (agentNetns) await run(["ip", "netns", "del", agentNetns]);
      },
    };
  } catch (e) {
    await w.dispose();
    if (agentNetns) await run(["ip", "netns", "del", agentNetns]).catch(() => {});
    throw e;
  }
}

/** The kubelet's probes of the system daemon at the node's addresses reach it untagged. */
async function assertDaemonUntagged(w: AgentWorld): Promise<void> {
  for (
    const [host, port, path] of [[NODE.ipv4, HTTP_PORT, "/"], [NODE.ipv6, TCP_PORT]] as const
  ) {
    const res = await w.probe(host, port, path);
    assert.equal(res.result, "reached", `${host}:${port}: ${JSON.stringify(res)}`);
    assert.equal(res.body, "system-daemon", `${host}:${port}: ${JSON.stringify(res)}`);
    assert.ok(!res.mark, `${host}:${port} tagged with mark ${res.mark}: ${JSON.stringify(res)}`);
  }
}

/** Plays the ADD naming the node's addresses under `sharing`; see the tests below. */
async function refusedAtAdd(
  sharing: "exclusive" | "shared",
  opts: HostWorldOptions & { afterRefusal?: (agent: AgentProcess) => Promise<void> } = {},
): Promise<void> {
  const tenant = podBeforeAdd("tenant", 2, HTTP_PORT, TCP_PORT);
  await using t = await startHostWorld([tenant], sharing, opts);
  const { w, agent, socket } = t;
  const add = await plugin(
    "ADD",
    socket,
    { name: "tenant", uid: "uid-tenant" },
    { network: "net2", networkId: 2 },
    [NODE.ipv4, NODE.ipv6],
  );
  // The attack's effect first: the kubelet's probe of the daemon must not carry network 2's mark.
  await assertDaemonUntagged(w);
  assert.equal(add.code, 1, add.stdout + add.stderr);
  assert.equal(add.result.code, 101);
  assert.match(add.result.msg, /node's own addresses/);
  await metricReaches(agent, 'lace_cni_add_refusals_total{reason="host-address"}', 1);
  if (opts.agentInOwnNetns) {
    // Read from the kubelet's namespace, and the doctor names the agent's other namespace.
    await metricReaches(agent, "lace_agent_other_netns", 1);
    assert.equal(await agent.metric("lace_host_addresses_fallback"), 0);
    const view = JSON.parse((await agent.local("/addresses")).body) as AddressesView;
    assert.equal(view.hostAddressSource?.source, "kubelet-netns");
    assert.equal(hostAddressSourceCheck(view.hostAddressSource!).ok, false);
    assert.match(
      hostAddressSourceCheck(view.hostAddressSource!).message,
      /another network namespace/,
    );
  }
  await opts.afterRefusal?.(agent);
}

Deno.test({
  name:
    "a CNI ADD naming one of the node's own addresses is refused under exclusive, so the kubelet's probes of the node's host-network pods there are never tagged into the tenant's network",
  ...agentTestOptions,
  fn: () => refusedAtAdd("exclusive"),
});

Deno.test({
  name:
    "a CNI ADD naming one of the node's own addresses is refused under shared, so the kubelet's probes of the node's host-network pods there are never tagged into the tenant's network",
  ...agentTestOptions,
  fn: () => refusedAtAdd("shared"),
});

Deno.test({
  name:
    "an agent in another network namespace than the kubelet reads the node's own addresses from the kubelet's, so a CNI ADD naming one is still refused",
  ...agentTestOptions,
  fn: () => refusedAtAdd("exclusive", { agentInOwnNetns: true }),
});

Deno.test({
  name:
    "the agent reads the node's own addresses through the kubelet's own process, not through a process of its cgroup in a pod's namespace, so a CNI ADD naming one is still refused",
  ...agentTestOptions,
  async fn() {
    await using tree = CgroupTree.create();
    tree.mkdir("kubelet.service");
    let kubelet = 0;
    await refusedAtAdd("exclusive", {
      kubeletCgroup: async (w) => {
        // A helper of the kubelet's cgroup in a pod's namespace (entered for some pod's sake),
        // there first, so the first process the cgroup lists; then the kubelet, on the node.
        const netns = (name: string) => ["nsenter", `--net=/run/netns/${name}`];
        await tree.fakeProcess("kubelet.service", "helper", netns(w.node.network(2).podNetns));
        kubelet = await tree.fakeKubelet("kubelet.service", netns(w.node.netns));
        return tree.path("kubelet.service");
      },
      async afterRefusal(agent) {
        const view = JSON.parse((await agent.local("/addresses")).body) as AddressesView;
        assert.deepEqual(view.hostAddressSource, {
          source: "kubelet-netns",
          pid: kubelet,
          otherNetns: false,
        });
      },
    });
  },
});

Deno.test({
  name:
    "a pod known at one of the node's own addresses gets no targets there, and lace's /addresses names it for the doctor",
  ...agentTestOptions,
  async fn() {
    // Its view names the node's address (as the API or a CNI result the agent did not refuse
    // would, e.g. one from before this agent): the reconcile must hold the address for the host.
    await using t = await startHostWorld([tenantAt([NODE.ipv4, NODE.ipv6])], "exclusive");
    const { w, agent } = t;
    // Ready: the first full list (the pods directory's) is in the map.
    await assertDaemonUntagged(w);
    await metricReaches(agent, 'lace_probes_ignored{reason="host-address"}', 2);
    const view = await waitFor(async () => {
      const v = JSON.parse((await agent.local("/addresses")).body) as AddressesView;
      return v.hostHeld?.length ? v : undefined;
    }, { message: "/addresses naming the pod at the node's addresses" });
    assert.deepEqual(
      view.hostHeld?.map((h) => h.address).sort(),
      [NODE.ipv4, NODE.ipv6].sort(),
    );
    assert.ok(view.hostHeld?.every((h) => h.pod === "e2e/tenant"));
  },
});

/** Waits until the kubelet's probes of the pod at POD_IPV4:`http` and POD_IPV6:`tcp` carry a mark or none. */
async function probesTagged(w: AgentWorld, http: number, tcp: number, tagged: boolean) {
  for (const [host, port, path] of [[POD_IPV4, http, "/"], [POD_IPV6, tcp]] as const) {
    await waitFor(async () => Boolean((await w.probe(host, port, path)).mark) === tagged, {
      timeout: 10_000,
      message: `the kubelet's probe of ${host}:${port} ${tagged ? "tagged" : "untagged"}`,
    });
  }
}

Deno.test({
  name:
    "a pod already learnt at an address the node gains later loses its probe targets there within seconds, not at the periodic resync, and gets them back when the node drops it",
  ...agentTestOptions,
  async fn() {
    // The periodic resync an hour away: only the agent's check of the node's addresses can act.
    await using t = await startHostWorld([tenantAt()], "exclusive", {
      extra: ["--resync-interval=1h"],
    });
    const { w, agent } = t;
    await probesTagged(w, HTTP_PORT, TCP_PORT, true);
    const ignored = async () =>
      (await agent.metric('lace_probes_ignored{reason="host-address"}')) ?? 0;
    assert.equal(await ignored(), 0);
    // The node (the test's namespace) gains the pod's addresses: a host-network daemon could
    // listen there now, and the kubelet's probes of it must not go into the tenant's network.
    const node = ["ip", "-n", w.node.netns, "addr"];
    await run([...node, "add", `${POD_IPV4}/32`, "dev", "lo"]);
    await run([...node, "add", `${POD_IPV6}/128`, "dev", "lo", "nodad"]);
    await probesTagged(w, HTTP_PORT, TCP_PORT, false);
    await metricReaches(agent, 'lace_probes_ignored{reason="host-address"}', 2);
    // Dropped again: the pod's targets come back.
    await run([...node, "del", `${POD_IPV4}/32`, "dev", "lo"]);
    await run([...node, "del", `${POD_IPV6}/128`, "dev", "lo"]);
    await probesTagged(w, HTTP_PORT, TCP_PORT, true);
    await waitFor(async () => (await ignored()) === 0, { message: "no probe ignored" });
  },
});

Deno.test({
  name:
    "a kubelet cgroup with no process of its own is never read through a process of a cgroup below it, so a pod's namespace there does not make the pod's addresses the host's",
  ...agentTestOptions,
  async fn() {
    await using tree = CgroupTree.create();
    let podProcess = 0;
    await using t = await startHostWorld([tenantAt()], "exclusive", {
      kubeletCgroup: async (w) => {
        // A slice as the kubelet cgroup with no process of its own and no kubelet found yet;
        // below it a pod's process in the tenant's namespace, which holds POD_IPV4 and POD_IPV6.
        tree.mkdir("kubelet.slice/kubepods/pod-tenant");
        podProcess = await tree.fakeProcess("kubelet.slice/kubepods/pod-tenant", "pause", [
          "nsenter",
          `--net=/run/netns/${w.node.network(2).podNetns}`,
        ]);
        return tree.path("kubelet.slice");
      },
    });
    const { w, agent } = t;
    const view = async () => JSON.parse((await agent.local("/addresses")).body) as AddressesView;
    const read = await waitFor(async () => (await view()).hostAddressSource, {
      message: "the agent's first read of the node's addresses",
    });
    // The pod's process is not read as the node's: the tenant's addresses would be held for the host.
    assert.notEqual(read.pid, podProcess, JSON.stringify(read));
    assert.equal(read.source, "fallback", JSON.stringify(read));
    assert.match(read.error ?? "", /no process in the kubelet cgroup itself/);
    assert.equal(hostAddressSourceCheck(read).ok, false);
    assert.equal(await agent.metric("lace_host_addresses_fallback"), 1);
    assert.deepEqual((await view()).hostHeld ?? [], []);
    assert.equal(await agent.metric('lace_probes_ignored{reason="host-address"}') ?? 0, 0);
    // A kubelet stand-in in the cgroup itself, on the node: read there, and its probes of the
    // tenant's pod are tagged into the tenant's network.
    await using kubelet = await Prober.start({
      netns: w.node.netns,
      cgroup: tree.path("kubelet.slice"),
    });
    await waitFor(async () => (await view()).hostAddressSource?.pid === kubelet.pid, {
      message: "the node's addresses read through the kubelet stand-in",
    });
    assert.equal((await view()).hostAddressSource?.source, "kubelet-netns");
    for (const [host, port, path] of [[POD_IPV4, HTTP_PORT, "/"], [POD_IPV6, TCP_PORT]] as const) {
      const res = await kubelet.probe({
        host,
        port,
        timeoutMs: 1000,
        ...(path ? { http: path } : {}),
      });
      assert.equal(res.body, w.podIn(2), `${host}:${port}: ${JSON.stringify(res)}`);
      assert.ok(res.mark, `${host}:${port} untagged: ${JSON.stringify(res)}`);
    }
    assert.deepEqual((await view()).hostHeld ?? [], []);
  },
});
