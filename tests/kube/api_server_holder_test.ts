/**
 * A tenant's pod at the real API server's address, without pod ranges (--pod-cidrs unset, the
 * default): the agent runs as the chart's ServiceAccount against the real kube-apiserver and reads
 * the `kubernetes` Service's ClusterIP (10.96.0.1, through the chart's Role in default) and its
 * EndpointSlices (a list by label, which the same Role allows). The
 * simulated node's kubelet reaches its API server at that address and port (the Service's 443:
 * a server in a namespace of its own behind the node's main table, as kube-proxy would take it
 * there), and the tenant's pod of network 2 holds the same address in network 2 (a Multus static
 * IP, any CNI result naming it) with a readiness probe on 443. Were its probe a target, the
 * kubelet's own API connections would be tagged into network 2 and answered by the tenant; the
 * host holds the address instead: no target there, ProbeIgnored (host-address), an ADD bringing it
 * refused (101) under both sharing modes, and `lace doctor` names the pod at the API server's
 * address.
 */
import assert from "node:assert/strict";
import { CoreV1Api, DiscoveryV1Api } from "@kubernetes/client-node";
import { loadKubeConfig } from "../../lib/kube/client.ts";
import { hostAddressesCheck } from "../../lib/doctor/agent_checks.ts";
import type { AddressesView } from "../../lib/agent_api/views.ts";
import { podManifest } from "../helpers/agent_process.ts";
import { startInfraWorld } from "../helpers/infra_world.ts";
import { assertAddRefused, metricReaches, podBeforeAdd } from "../helpers/tenant_world.ts";
import { needsRoot } from "../helpers/skip.ts";
import { waitFor } from "../helpers/wait.ts";
import { startControlPlane } from "./fixture.ts";
import { apiServerRolesApply, applyObjects, helmTemplate } from "./helm.ts";
import { chartOnControlPlaneUnavailableReason, controlPlaneTestOptions } from "./tools.ts";

const unavailable = needsRoot() ?? await chartOnControlPlaneUnavailableReason();
if (unavailable) console.warn(`Skipping the API server holder tests: ${unavailable}`);

const SYSTEM = "lace-system";
const NODE = "e2e-node";
/** The port of the `kubernetes` Service. */
const API_PORT = 443;

Deno.test({
  name:
    "without pod ranges, a pod at the API server's address (the kubernetes Service's ClusterIP) gets no targets there and an ADD bringing it is refused, so the kubelet's own API connections are never tagged into the pod's network",
  ...controlPlaneTestOptions(unavailable),
}, async (t) => {
  await using cp = await startControlPlane();
  const admin = cp.adminConfig();
  const core = admin.makeApiClient(CoreV1Api);
  await cp.createNamespace(SYSTEM);
  await applyObjects(admin, await helmTemplate({ namespace: SYSTEM }), SYSTEM);
  const kubeconfig = await cp.writeKubeconfigForToken(
    await cp.serviceAccountToken(SYSTEM, "lace"),
    "lace",
  );
  // The chart's Roles in default and kube-public reach the authorizer late.
  const asAgent = loadKubeConfig({ kubeconfig });
  await waitFor(async () => {
    await apiServerRolesApply(asAgent);
    return true;
  }, { timeout: 15_000, message: "the chart's Roles in default and kube-public to take effect" });
  await core.createNode({ body: { metadata: { name: NODE } } });
  // kubeadm's cluster-info, naming an HA control plane's load balancer (in no Service).
  await core.createNamespacedConfigMap({
    namespace: "kube-public",
    body: {
      metadata: { name: "cluster-info" },
      data: {
        kubeconfig:
          "apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.98.0.100:6443\n" +
          '  name: ""\n',
      },
    },
  });
  // The kubernetes Service's EndpointSlices, as the API server's endpoint reconciler writes them
  // (this one runs with none: its loopback address cannot be an endpoint), one per address
  // family, a ready and a not-ready endpoint; and another Service's slice in default, not held.
  const discovery = admin.makeApiClient(DiscoveryV1Api);
  const slice = (name: string, service: string, addressType: string, addresses: string[]) =>
    discovery.createNamespacedEndpointSlice({
      namespace: "default",
      body: {
        metadata: { name, labels: { "kubernetes.io/service-name": service } },
        addressType,
        endpoints: addresses.map((address, i) => ({
          addresses: [address],
          conditions: { ready: i === 0 },
        })),
        ports: [{ name: "https", port: 6443, protocol: "TCP" }],
      },
    });
  await slice("kubernetes", "kubernetes", "IPv4", ["10.98.0.1", "10.98.0.2"]);
  await slice("kubernetes-ipv6", "kubernetes", "IPv6", ["fd00:98::1"]);
  await slice("other", "other", "IPv4", ["10.98.0.50"]);
  const service = await core.readNamespacedService({ name: "kubernetes", namespace: "default" });
  const apiServer = service.spec!.clusterIP!;
  assert.equal(apiServer, "10.96.0.1");
  const server = { address: apiServer, port: API_PORT };

  for (const sharing of ["exclusive", "shared"]) {
    await t.step(`${sharing}: a pod learnt at the address gets no targets there`, async () => {
      const squatter = podManifest({
        name: "tenant",
        networkId: 2,
        httpPort: 8083,
        tcpPort: API_PORT,
        ips: [apiServer],
      });
      await using world = await startInfraWorld(server, [squatter], [
        `--kubeconfig=${kubeconfig}`,
        `--address-sharing=${sharing}`,
      ]);
      const { agent } = world;
      const logs = () => `\n--- agent log ---\n${agent.logs.slice(-30).join("\n")}`;
      // Ready: both sources' first lists are applied, the API server's addresses read before.
      await world.assertServerUntagged(logs());
      await metricReaches(agent, 'lace_probes_ignored{reason="host-address"}', 1);
      assert.equal(await agent.metric("lace_api_server_sources_failing"), 0, logs());
      const view = JSON.parse((await agent.local("/addresses")).body) as AddressesView;
      assert.deepEqual(view.hostHeld, [{ pod: "e2e/tenant", address: apiServer }]);
      assert.deepEqual(view.podRanges, []);
      const kubernetesService = view.apiServer?.sources.find((s) =>
        s.name === "kubernetes-service"
      );
      assert.deepEqual(kubernetesService, { name: "kubernetes-service", addresses: [apiServer] });
      assert.deepEqual(
        view.apiServer?.sources.find((s) => s.name === "kubernetes-endpointslices"),
        {
          name: "kubernetes-endpointslices",
          addresses: ["10.98.0.1", "10.98.0.2", "fd00:98::1"],
        },
        logs(),
      );
      assert.ok(!view.apiServer?.addresses.includes("10.98.0.50"), "another Service's slice");
      assert.deepEqual(view.apiServer?.sources.find((s) => s.name === "cluster-info"), {
        name: "cluster-info",
        addresses: ["10.98.0.100"],
      });
      const doctor = hostAddressesCheck(view.hostHeld!, view.apiServer?.addresses);
      assert.equal(doctor.ok, false);
      assert.match(doctor.message, /e2e\/tenant at 10\.96\.0\.1 \(the API server's\)/);
    });

    await t.step(`${sharing}: a CNI ADD bringing the address is refused`, async () => {
      const tenant = podBeforeAdd("tenant", 2, 8083, API_PORT);
      await using world = await startInfraWorld(server, [tenant], [
        `--kubeconfig=${kubeconfig}`,
        `--address-sharing=${sharing}`,
      ]);
      const { agent } = world;
      const add = await world.addAtServer("tenant");
      await world.assertServerUntagged();
      assertAddRefused(
        add,
        /10\.96\.0\.1 is one of this node's own addresses or the Kubernetes API server's/,
      );
      await metricReaches(agent, 'lace_cni_add_refusals_total{reason="host-address"}', 1);
    });
  }
});
