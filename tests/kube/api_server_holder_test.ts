/**
 * A tenant's pod at the real API server's address, without pod ranges (--pod-cidrs unset, the
 * default): the agent runs as the chart's ServiceAccount against the real kube-apiserver and reads
 * the `kubernetes` Service's ClusterIP (10.96.0.1, through the chart's Role in default) and its
 * EndpointSlice (by name, which the same Role allows), not the slices another writer labels for
 * the `kubernetes` Service. The
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
/** Another tenant's pod, which an attacker's EndpointSlice names. */
const VICTIM_IP = "10.98.0.77";

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
  // The kubernetes Service's EndpointSlice, as the API server's endpoint reconciler writes it
  // (this one runs with none: its loopback address cannot be an endpoint): one slice named
  // kubernetes, a ready and a not-ready endpoint; and another Service's slice in default, not held.
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
  await slice("other", "other", "IPv4", ["10.98.0.50"]);
  // The attacker, who may create EndpointSlices in default, labels its own for the kubernetes
  // Service: one naming another tenant's pod (which would lose its targets to the host), and 63
  // addresses in slices named before kubernetes, which with that one fill the cap of 64 first
  // (a list comes in name order) and would push the API server's real addresses out of the set.
  for (let i = 0; i < 2; i++) {
    const addresses = Array.from({ length: 32 - i }, (_, j) => `10.99.${i}.${j}`);
    await slice(`a-fill-${i}`, "kubernetes", "IPv4", addresses);
  }
  await slice("evil", "kubernetes", "IPv4", [VICTIM_IP]);
  const service = await core.readNamespacedService({ name: "kubernetes", namespace: "default" });
  const apiServer = service.spec!.clusterIP!;
  assert.equal(apiServer, "10.96.0.1");
  const server = { address: apiServer, port: API_PORT };

  await t.step(
    "EndpointSlices another writer labels for the kubernetes Service put no address in the host's set and push none of the API server's out, so another tenant's pod there keeps its targets",
    async () => {
      const victim = podManifest({
        name: "victim",
        networkId: 1,
        httpPort: 8082,
        tcpPort: 9002,
        ips: [VICTIM_IP],
      });
      await using world = await startInfraWorld(server, [victim], [`--kubeconfig=${kubeconfig}`]);
      const { agent } = world;
      const logs = () => `\n--- agent log ---\n${agent.logs.slice(-30).join("\n")}`;
      await world.assertServerUntagged(logs());
      assert.equal(await agent.metric("lace_api_server_sources_failing"), 0, logs());
      const view = JSON.parse((await agent.local("/addresses")).body) as AddressesView;
      const held = view.apiServer?.addresses ?? [];
      assert.ok(held.includes("10.98.0.1") && held.includes("10.98.0.2"), JSON.stringify(held));
      const attackers = held.filter((a) => a === VICTIM_IP || a.startsWith("10.99."));
      assert.deepEqual(attackers, [], "no address of the attacker's slices is held");
      assert.deepEqual(view.hostHeld, [], "the victim's pod is not at a host-held address");
      await metricReaches(agent, `lace_probe_targets{family="ipv4",network_id="1"}`, 2);
    },
  );

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
        view.apiServer?.sources.find((s) => s.name === "kubernetes-endpointslice"),
        { name: "kubernetes-endpointslice", addresses: ["10.98.0.1", "10.98.0.2"] },
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
