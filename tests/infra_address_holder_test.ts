/**
 * A tenant's pod at an address the kubelet itself connects to, played against the real agent
 * process in the simulated node's namespace: an "API server" in a namespace of its own, reached
 * from the node by its main routing table at 10.98.0.1:6443 (off the node, outside every pod
 * range), and the tenant's pod of network 2 given that address (a Multus static IP, any CNI
 * result naming it) with a readiness probe on port 6443. The tenant's pod really holds the
 * address in network 2's namespace, so a connection tagged into network 2 lands there. Without
 * pod ranges the agent registers the tenant's probe at 10.98.0.1:6443, and the kubelet's own
 * connections to its API server are tagged into the tenant's network and answered by the tenant
 * (the exposure the agent and `lace doctor` name); with --pod-cidrs the address is no pod's: the
 * pod gets no targets there and an ADD bringing it is refused, under both sharing modes.
 */
import assert from "node:assert/strict";
import { agentTestOptions, podManifest } from "./helpers/agent_process.ts";
import { startInfraWorld as startInfra } from "./helpers/infra_world.ts";
import { assertAddRefused, metricReaches, podBeforeAdd } from "./helpers/tenant_world.ts";
import { podRangesCheck } from "../lib/doctor/agent_checks.ts";
import type { AddressesView } from "../lib/agent_api/views.ts";
import { waitFor } from "./helpers/wait.ts";
import { CgroupTree } from "./helpers/cgroup_fixture.ts";
import { hostAddressesCheck } from "../lib/doctor/agent_checks.ts";

/** The API server's address and port as the kubelet's kubeconfig names them. */
const API_SERVER = "10.98.0.1", API_PORT = 6443;
/** The simulated pods' ranges (lib/demo/netns.ts). */
const POD_CIDRS = "--pod-cidrs=10.244.1.0/24,fd00:244::/64";

/** The world of tests/helpers/infra_world.ts at the API server's address, without the API. */
function startInfraWorld(
  dirPods: Record<string, unknown>[],
  flags: string[],
  opts?: Parameters<typeof startInfra>[3],
) {
  return startInfra(
    { address: API_SERVER, port: API_PORT },
    dirPods,
    ["--no-kube-api", ...flags],
    opts,
  );
}

/** The tenant's pod of network 2 at the API server's address, its readiness probe on its port. */
function squatter(): Record<string, unknown> {
  return podManifest({
    name: "tenant",
    networkId: 2,
    httpPort: 8083,
    tcpPort: API_PORT,
    ips: [API_SERVER],
  });
}

Deno.test({
  name:
    "a pod at an address outside the pod ranges gets no targets there, so the kubelet's own connections to that address (its API server) are never tagged into the pod's network",
  ...agentTestOptions,
  async fn() {
    for (const sharing of ["exclusive", "shared"]) {
      await using t = await startInfraWorld([squatter()], [
        POD_CIDRS,
        `--address-sharing=${sharing}`,
      ]);
      const { agent } = t;
      // Ready: the pods directory's first list is applied.
      await t.assertServerUntagged(`${sharing}: `);
      await metricReaches(agent, 'lace_probes_ignored{reason="outside-pod-ranges"}', 1);
      const view = await waitFor(async () => {
        const v = JSON.parse((await agent.local("/addresses")).body) as AddressesView;
        return v.outsidePodRanges?.length ? v : undefined;
      }, { message: "/addresses naming the pod outside the pod ranges" });
      assert.deepEqual(view.outsidePodRanges, [{ pod: "e2e/tenant", address: API_SERVER }]);
      const doctor = podRangesCheck(view.podRanges ?? [], view.outsidePodRanges ?? []);
      assert.equal(doctor.ok, false);
      assert.match(doctor.message, /e2e\/tenant at 10\.98\.0\.1/);
    }
  },
});

Deno.test({
  name:
    "a CNI ADD bringing an address outside the pod ranges is refused, so the kubelet's own connections to that address are never tagged into the pod's network",
  ...agentTestOptions,
  async fn() {
    const tenant = podBeforeAdd("tenant", 2, 8083, API_PORT);
    await using t = await startInfraWorld([tenant], [POD_CIDRS, "--address-sharing=shared"]);
    const { agent } = t;
    const add = await t.addAtServer("tenant");
    await t.assertServerUntagged();
    assertAddRefused(add, /outside every pod range/);
    await metricReaches(agent, 'lace_cni_add_refusals_total{reason="outside-pod-ranges"}', 1);
  },
});

Deno.test({
  name:
    "without pod ranges the kubelet's connections to an address a pod holds are tagged into its network, and the agent and doctor say so",
  ...agentTestOptions,
  async fn() {
    await using t = await startInfraWorld([squatter()], []);
    const { agent } = t;
    // The exposure --pod-cidrs closes: the tenant answers the kubelet's API server connection.
    const api = await waitFor(async () => {
      const a = await t.kubeletToServer();
      return a.body === "tenant-pod" ? a : undefined;
    }, { message: "the tenant's probe target at the API server's address" });
    assert.equal(api.mark, 0x21000, api.res);
    await waitFor(() => agent.logs.some((l) => l.includes("No pod ranges (--pod-cidrs)")), {
      message: "the agent's warning at start",
    });
    const view = JSON.parse((await agent.local("/addresses")).body) as AddressesView;
    assert.deepEqual(view.podRanges, []);
    const doctor = podRangesCheck(view.podRanges!, view.outsidePodRanges ?? []);
    assert.equal(doctor.ok, false);
    assert.equal(doctor.severity, "warning");
    assert.match(doctor.message, /^no pod ranges \(--pod-cidrs\)/);
  },
});

Deno.test({
  name:
    "without pod ranges or the API, the server the kubelet's own kubeconfig names is held by the host: a pod learnt there gets no targets there and an ADD bringing it is refused",
  ...agentTestOptions,
  async fn() {
    // The node's kubelet, in the node's namespace, started with --kubeconfig naming its API server.
    await using tree = CgroupTree.create();
    tree.mkdir("kubelet.service");
    const dir = await Deno.makeTempDir({ prefix: "lace-kubelet-conf-" });
    const kubeconfig = `${dir}/kubelet.conf`;
    await Deno.writeTextFile(
      kubeconfig,
      `apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://${API_SERVER}:${API_PORT}\n  name: default\n`,
    );
    try {
      await using t = await startInfraWorld(
        [squatter(), podBeforeAdd("late", 2, 8084, API_PORT)],
        ["--address-sharing=shared"],
        {
          kubeletCgroup: async (w) => {
            const netns = ["nsenter", `--net=/run/netns/${w.node.netns}`];
            await tree.fakeKubeletWithKubeconfig("kubelet.service", kubeconfig, netns);
            return tree.path("kubelet.service");
          },
        },
      );
      const { agent } = t;
      // Read once the follower knows the kubelet's pid, and reconciled at the next check of the
      // node's addresses (HOST_ADDRESS_CHECK_MS).
      const view = await waitFor(async () => {
        const v = JSON.parse((await agent.local("/addresses")).body) as AddressesView;
        return v.hostHeld?.length ? v : undefined;
      }, {
        timeout: 15_000,
        message: "/addresses naming the pod at the kubelet's API server",
      }).catch(async (e) => {
        const v = (await agent.local("/addresses")).body;
        throw new Error(`${e.message}\n/addresses: ${v}\n${agent.logs.slice(-20).join("\n")}`);
      });
      assert.deepEqual(view.hostHeld, [{ pod: "e2e/tenant", address: API_SERVER }]);
      assert.deepEqual(view.apiServer?.sources, [
        { name: "kubelet-kubeconfig", addresses: [API_SERVER] },
      ]);
      assert.match(
        hostAddressesCheck(view.hostHeld!, view.apiServer?.addresses).message,
        /e2e\/tenant at 10\.98\.0\.1 \(the API server's\)/,
      );
      await metricReaches(agent, 'lace_probes_ignored{reason="host-address"}', 1);
      assertAddRefused(await t.addAtServer("late"), /or the Kubernetes API server's/);
      await metricReaches(agent, 'lace_cni_add_refusals_total{reason="host-address"}', 1);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
