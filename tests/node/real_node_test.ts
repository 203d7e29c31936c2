/**
 * Lace on a real node (tests/node/node.ts): the chart installed by the real helm, the agent
 * started by the real kubelet from the lace image, and the kubelet's own probes of pods in three
 * isolated networks that share their addresses. The node is brought up once for the file; each
 * step shows one behaviour, in the order a user meets them. Prints what it measured.
 */
import { AppsV1Api, CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import assert from "node:assert/strict";
import { join } from "node:path";
import { nodeUnavailableReason } from "../kube/tools.ts";
import { HAND_CHAINED, helmTest, installLace, removeLace, upgradeLace } from "./chart.ts";
import { laceLauncher } from "./images.ts";
import { startNode } from "./node.ts";
import { NETWORKS } from "./network.ts";
import { explainFailure, waitFor } from "../helpers/wait.ts";
import type { TargetView } from "../../lib/agent_api/views.ts";
import {
  agentLog,
  agentTargets,
  assertProbedThroughout,
  containerLog,
  createProbePods,
  decoysUntouched,
  deletePods,
  failedProbes,
  failWithLogs,
  isReady,
  kubeletPrograms,
  newPodBecomesReady,
  ownProbes,
  ownProbesOf,
  readyAgentPod,
  restarts,
  waitUntilReady,
} from "./pod_checks.ts";
import { unchainLace } from "./net_plugin_setup.ts";
import { PROBE_NAMESPACE, probeMessage, probePod } from "./probe_pods.ts";

/** Pods by name, phase and whether they are being deleted, for a wait's failure. */
function podsText(pods: V1Pod[]): string {
  return pods.map((p) =>
    `${p.metadata?.name} ${p.status?.phase}${p.metadata?.deletionTimestamp ? " terminating" : ""}`
  ).join(", ");
}
import { skipIf } from "../helpers/skip.ts";
import { kubectlLace, readOnlyKubeconfig } from "./kubectl_plugin.ts";

const reason = await nodeUnavailableReason();
Deno.test({
  name:
    "Lace on a real node: the chart's agent makes the kubelet's probes reach pods in isolated networks",
  ignore: skipIf(reason),
  sanitizeOps: false,
  sanitizeResources: false,
}, async (t) => {
  const start = performance.now();
  // kubeletApi: the API server reaches the kubelet, for kubectl lace's exec.
  await using node = await startNode({
    laceVariant: true,
    podsReachNode: true,
    kubeletApi: true,
    sharedAddresses: true,
  });
  console.log(
    `node up in ${Math.round(performance.now() - start)} ms: ${JSON.stringify(node.timings)}`,
  );
  const config = node.controlPlane.adminConfig();
  const core = config.makeApiClient(CoreV1Api);
  const apps = config.makeApiClient(AppsV1Api);
  const onFailure = failWithLogs(node);

  // Three networks give their pods the same addresses on this one node, which the default
  // (one network per address, node.addressSharing=exclusive) refuses: the opt-in runs here
  // (tests/node/isolation_node_test.ts shows both).
  // helm test's pod joins network red (the node's network plugin attaches pods by this label) at
  // its last host number, from which the network's round-robin wraps to where it was: the later
  // pods get the addresses they got without it.
  const values = [
    ...HAND_CHAINED,
    "--set",
    "node.addressSharing=shared",
    "--set-string",
    "tests.podLabels.lace-test\\.io/network=red",
    "--set-string",
    "tests.podLabels.lace-test\\.io/host-index=250",
  ];
  const upgrade = (...extra: string[]) => upgradeLace(node, ...values, ...extra);

  await t.step(
    "helm install brings up the agent's DaemonSet pod, Ready, with the CNI plugin installed",
    async () => {
      const began = performance.now();
      await installLace(node, ...values);
      const ds = await apps.readNamespacedDaemonSet({ name: "lace", namespace: "lace-system" });
      assert.equal(ds.spec?.template.spec?.containers[0].image, "lace.test/lace:dev");
      const pod = await waitFor(async () => {
        const list = await core.listNamespacedPod({ namespace: "lace-system" });
        return list.items.find((p) => p.spec?.nodeName === node.name && isReady(p));
      }, { timeout: 120_000, interval: 250, message: "the agent pod to be Ready" }).catch(
        onFailure,
      );
      console.log(`agent pod Ready ${Math.round(performance.now() - began)} ms after helm install`);
      assert.equal(pod.metadata?.ownerReferences?.[0]?.kind, "DaemonSet");
      const installed = await node.exec(["cat", "/opt/cni/bin/lace"]);
      assert.equal(installed, laceLauncher(), "the init container installed the lace launcher");
    },
  );

  await t.step(
    "pods in three networks sharing their addresses pass every probe over IPv4 and IPv6, each answered by its own pod",
    async () => {
      await node.controlPlane.createNamespace(PROBE_NAMESPACE);
      // Dual-stack pods first: the kubelet probes status.podIP, of the node's primary family,
      // IPv4 here. Then IPv6-only pods, whose status.podIP, so every probe, is IPv6. One set at a
      // time, so each set takes the same host number in every network.
      const dual = await waitUntilReady(core, await createProbePods(core, node, "lace"))
        .catch(onFailure);
      console.log(
        `creation to Ready, with Lace, IPv4 probes (ms): ${JSON.stringify(dual.readyAfter)}`,
      );
      const v6 = await waitUntilReady(core, await createProbePods(core, node, "lace6", "ipv6"))
        .catch(onFailure);
      console.log(
        `creation to Ready, with Lace, IPv6 probes (ms): ${JSON.stringify(v6.readyAfter)}`,
      );
      const addresses = (pods: V1Pod[]) => [
        ...new Set(pods.map((p) => p.status?.podIPs?.map((ip) => ip.ip).join(","))),
      ];
      assert.deepEqual(addresses(dual.pods), ["10.244.1.10,fd00:244::a"]);
      assert.deepEqual(addresses(v6.pods), ["fd00:244::b"]);
      const pods = [...dual.pods, ...v6.pods];
      const events = await core.listNamespacedEvent({ namespace: PROBE_NAMESPACE });
      const unhealthy = events.items.filter((e) => e.reason === "Unhealthy");
      assert.deepEqual(unhealthy.map((e) => `${e.involvedObject.name}: ${e.message}`), []);
      for (const pod of pods) assert.equal(restarts(pod), 0, `${pod.metadata!.name} restarted`);

      // Every HTTP probe reached its own pod and no other: agnhost logs each path it serves.
      const perPod: Record<string, number> = {};
      for (const pod of pods) {
        const name = pod.metadata!.name!;
        for (const container of ["server", "sidecar"]) {
          const message = probeMessage(name, container);
          // The runtime writes container logs shortly after the fact.
          const log = await explainFailure(
            waitFor(async () => {
              const text = await containerLog(node, pod, container);
              return text.includes(message) ? text : undefined;
            }, {
              timeout: 15_000,
              interval: 250,
              message: `${name}/${container} to log a probe of its own`,
            }),
            () => containerLog(node, pod, container).catch(String),
          );
          const own = log.split(message).length - 1;
          perPod[`${name}/${container}`] = own;
          for (const other of pods) {
            if (other === pod) continue;
            assert.ok(
              !log.includes(probeMessage(other.metadata!.name!, container)),
              `${name}/${container} answered a probe meant for ${other.metadata!.name}`,
            );
          }
        }
      }
      console.log(`HTTP probes answered per pod/container: ${JSON.stringify(perPod)}`);
      // Nothing was delivered into a pod of another network, where it would have been answered.
      await decoysUntouched(node, pods);
      // The IPv6 probes went through Lace's IPv6 targets: they were hit.
      const hit = (await agentTargets(node)).filter((t) =>
        t.family === "ipv6" && t.address === "fd00:244::b" && (t.hits ?? 0) > 0
      );
      assert.equal(new Set(hit.map((t) => t.pod)).size, 3, JSON.stringify(hit));
    },
  );

  await t.step(
    "helm test passes when every node's agent is attached and ready, and leaves no pod behind",
    async () => {
      const began = performance.now();
      const run = await helmTest(node);
      assert.ok(run.success, run.text);
      assert.match(run.text, /TEST SUITE:\s+lace-test[\s\S]*Phase:\s+Succeeded/);
      console.log(`helm test passed in ${Math.round(performance.now() - began)} ms`);
      await waitFor(async () => {
        const list = await core.listNamespacedPod({ namespace: "lace-system" });
        return !list.items.some((p) => p.metadata?.name === "lace-test");
      }, { timeout: 30_000, interval: 250, message: "the passed test's pod to be deleted" });
    },
  );

  await t.step(
    "kubectl lace finds the node's agent pod through the API and runs targets and doctor pod there",
    async () => {
      const admin = node.controlPlane.kubeconfigPath;
      const began = performance.now();
      const targets = await kubectlLace(node, admin, [
        "lace",
        "targets",
        "--node",
        node.name,
        "-o",
        "json",
      ]);
      console.log(`kubectl lace targets took ${Math.round(performance.now() - began)} ms`);
      assert.equal(targets.code, 0, targets.stderr);
      const viaPlugin = JSON.parse(targets.stdout) as TargetView[];
      const onNode = await agentTargets(node);
      // The map's keys and marks: pods are named only when the agent answers its socket within
      // the second lace targets waits, else it reads the pinned map (no pods), which a loaded
      // machine sees.
      const key = (t: TargetView) => `${t.family} ${t.address} ${t.port} ${t.mark}`;
      assert.deepEqual(viaPlugin.map(key).sort(), onNode.map(key).sort());
      assert.ok(viaPlugin.length > 0);

      // doctor pod without --node: the plugin reads the pod's node from the API.
      const pod = `${PROBE_NAMESPACE}/lace-${NETWORKS[0].name}`;
      const doctor = await kubectlLace(node, admin, ["lace", "doctor", "pod", pod]);
      // Each of its targets probed now from the kubelet's cgroup, by the agent in its pod.
      assert.equal(doctor.code, 0, `${doctor.stdout}${doctor.stderr}`);
      assert.match(doctor.stdout, new RegExp(`Pod ${pod}: `));
      assert.match(doctor.stdout, /reached/);
      assert.doesNotMatch(doctor.stdout, /TIMEOUT|REFUSED|NO_ROUTE/);

      const nowhere = await kubectlLace(node, admin, ["lace", "targets", "--node", "no-such-node"]);
      assert.equal(nowhere.code, 1);
      assert.match(nowhere.stderr, /no Lace agent pod on node "no-such-node"/);

      // Read-only access: the pod is found, the exec is refused, and the error names the verb.
      const reader = await readOnlyKubeconfig(node, "lace-system");
      const refused = await kubectlLace(node, reader, ["lace", "targets", "--node", node.name]);
      assert.equal(refused.code, 1, refused.stdout);
      assert.match(refused.stderr, /RBAC must let you create pods\/exec/);
    },
  );

  await t.step(
    "without the chained plugin a new pod still becomes Ready, from the API's pod status alone",
    async () => {
      // The agent then learns the pod's address only when the kubelet reports it to the API
      // server; the kubelet may probe before that, and such probes fail (Unhealthy events).
      const namespace = "probes-api-only";
      await node.controlPlane.createNamespace(namespace);
      const restore = await unchainLace(join(node.dir, "net.d"));
      const name = "api-only";
      const began = performance.now();
      try {
        const body = probePod({
          name,
          node: node.name,
          network: NETWORKS[1].name,
          portOffset: 100,
        });
        body.metadata!.namespace = namespace;
        await core.createNamespacedPod({ namespace, body });
        await waitFor(async () => isReady(await core.readNamespacedPod({ name, namespace })), {
          timeout: 120_000,
          interval: 250,
          message: `pod ${name} to be Ready`,
        }).catch(onFailure);
      } finally {
        await restore();
      }
      const readyMs = Math.round(performance.now() - began);
      // The measurement is only honest if the plugin really was out of the chain.
      assert.doesNotMatch(await agentLog(node), new RegExp(`CNI ADD registered ..${namespace}/`));
      const events = await core.listNamespacedEvent({ namespace });
      const failed = events.items.filter((e) => e.reason === "Unhealthy")
        .reduce((sum, e) => sum + (e.count ?? 1), 0);
      console.log(
        `creation to Ready without the CNI path: ${readyMs} ms, ${failed} failed probes before ` +
          `(with it: the steps above and below, no failed probe)`,
      );
      assert.deepEqual(await failedProbes(core), [], "the other pods were not disturbed");
      await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 0 });
    },
  );

  await t.step(
    "other processes on the node reach none of the pods' addresses, which the same command in the kubelet's cgroup reaches",
    async () => {
      const connect = (address: string) => `exec 3<>/dev/tcp/${address}/8080`;
      for (const address of ["10.244.1.10", "fd00:244::a", "fd00:244::b"]) {
        const outside = await node.execResult(["timeout", "3", "bash", "-c", connect(address)]);
        const why = new TextDecoder().decode(outside.stderr);
        assert.notEqual(outside.code, 0, `a process outside the kubelet reached ${address}:8080`);
        // Not a timeout or a refusal by some pod: untagged, it found no route into any network.
        assert.match(why, /No route to host|Network is unreachable/, why);
        // The positive control: the same command from the kubelet's cgroup is tagged and served.
        const inside = await node.execResult([
          "sh",
          "-c",
          `echo $$ > ${node.kubeletCgroup}/cgroup.procs && exec timeout 3 bash -c '${
            connect(address)
          }'`,
        ]);
        assert.equal(
          inside.code,
          0,
          `from the kubelet's cgroup ${address}:8080 was not reached: ` +
            new TextDecoder().decode(inside.stderr),
        );
      }
      // The kubelet still reaches them meanwhile: every pod stays Ready.
      const list = await core.listNamespacedPod({ namespace: PROBE_NAMESPACE });
      assert.ok(list.items.every(isReady));
    },
  );

  await t.step(
    "deleting the agent pod: the DaemonSet brings it back, no probe fails, new pods become Ready",
    async () => {
      const old = await readyAgentPod(core, node);
      await core.deleteNamespacedPod({ name: old.metadata!.name!, namespace: "lace-system" });
      await readyAgentPod(core, node, old.metadata!.uid);
      assert.deepEqual(await failedProbes(core), []);
      await newPodBecomesReady(core, node, "after-agent-restart", 0, "after agent restart");
    },
  );

  await t.step(
    "a chart upgrade to another release swaps the kubelet's programs in place without a failed probe",
    async () => {
      const old = await readyAgentPod(core, node);
      const programs = await kubeletPrograms(node);
      const pods = (await core.listNamespacedPod({ namespace: PROBE_NAMESPACE })).items;
      const served = () => Promise.all(pods.map((pod) => ownProbesOf(node, pod)));
      const before = await served();
      const began = performance.now();
      // Another image whose BPF object has other instructions (images.ts LACE_VARIANT_IMAGE).
      await upgrade("--set", "image.tag=variant");
      await readyAgentPod(core, node, old.metadata!.uid);
      const swapped = await kubeletPrograms(node);
      const seconds = (performance.now() - began) / 1000;
      const counts = assertProbedThroughout(pods, before, await served(), seconds);
      console.log(
        `chart upgrade to the variant object in ${seconds.toFixed(1)} s: programs ` +
          `${JSON.stringify(programs)} -> ${JSON.stringify(swapped)}; probes served ` +
          JSON.stringify(counts),
      );
      for (const type of ["cgroup_inet4_connect", "cgroup_inet6_connect"]) {
        assert.ok(programs[type] && swapped[type], `no ${type} program on the kubelet's cgroup`);
        assert.notEqual(swapped[type].id, programs[type].id, `${type} was not replaced`);
        assert.notEqual(swapped[type].tag, programs[type].tag, `${type} runs the same code`);
      }
      // In place: still one program of each type, none detached and attached again.
      assert.equal(Object.keys(swapped).length, Object.keys(programs).length);
      assert.deepEqual(await failedProbes(core), []);
      await newPodBecomesReady(core, node, "after-upgrade", 1, "after chart upgrade");
    },
  );

  await t.step(
    "a kubelet restarted in a new cgroup keeps probing through Lace without a failure",
    async () => {
      const before = await ownProbes(node, core, "lace-red");
      await node.restartKubelet();
      // Probes resumed: the restarted kubelet reached the pod again, more than once.
      await waitFor(async () => (await ownProbes(node, core, "lace-red")) >= before + 3, {
        timeout: 60_000,
        interval: 250,
        message: "the restarted kubelet to probe again",
      });
      assert.deepEqual(await failedProbes(core), []);
      await newPodBecomesReady(core, node, "after-kubelet-restart", 2, "after kubelet restart");
    },
  );

  await t.step(
    "the API server stopped for 30 s: no probe fails, and new pods become Ready after",
    async () => {
      // Failed probes cannot be reported while the API server is down (the kubelet sends the
      // Events later, or not at all): count what each pod served instead. Every readiness probe
      // that reached its pod is logged; one per second is the period.
      const pods = (await core.listNamespacedPod({ namespace: PROBE_NAMESPACE })).items;
      const served = () => Promise.all(pods.map((pod) => ownProbesOf(node, pod)));
      const before = await served();
      const outage = performance.now();
      await node.controlPlane.stopApiServer();
      // 30 s, thirty periods of the probes; what the outage must not cause is checked after.
      await new Promise((resolve) => setTimeout(resolve, 30_000));
      await node.controlPlane.startApiServer();
      const seconds = (performance.now() - outage) / 1000;
      const counts = assertProbedThroughout(pods, before, await served(), seconds);
      console.log(
        `probes served in ${seconds.toFixed(1)} s of API outage: ${JSON.stringify(counts)}`,
      );
      assert.deepEqual(await failedProbes(core), []);
      await newPodBecomesReady(core, node, "after-api-outage", 0, "after API outage");
    },
  );

  await t.step("a pod created while the agent is down becomes Ready once it is back", async () => {
    await upgrade("--set", "nodeSelector.lace-test/agent=off");
    await waitFor(async () => {
      const list = await core.listNamespacedPod({ namespace: "lace-system" });
      // Thrown, so a timeout names the pods still there.
      if (list.items.length) throw new Error(`left: ${podsText(list.items)}`);
      return true;
    }, { timeout: 60_000, interval: 250, message: "the agent pod to be gone" });
    const name = "while-agent-down";
    await core.createNamespacedPod({
      namespace: PROBE_NAMESPACE,
      body: probePod({ name, node: node.name, network: NETWORKS[2].name, portOffset: 200 }),
    });
    // Probed and failing: the kubelet's connections to it are not tagged.
    await waitFor(async () => {
      const failures = await failedProbes(core);
      return failures.some((f) => f.startsWith(`${name}:`));
    }, { timeout: 60_000, interval: 250, message: "the pod's first failed probe" });
    const back = performance.now();
    await upgrade();
    await readyAgentPod(core, node);
    await waitFor(async () => {
      return isReady(await core.readNamespacedPod({ name, namespace: PROBE_NAMESPACE }));
    }, { timeout: 60_000, interval: 250, message: `pod ${name} to be Ready` });
    console.log(
      `pod made while the agent was down: Ready ${
        Math.round(performance.now() - back)
      } ms after the agent came back`,
    );
    assert.deepEqual(await failedProbes(core, new Set([name])), []);
  });

  await t.step("a deleted pod's targets are removed", async () => {
    const name = "while-agent-down";
    const owned = (targets: TargetView[]) =>
      targets.some((t) => t.pod === `${PROBE_NAMESPACE}/${name}`);
    const before = await agentTargets(node);
    assert.ok(owned(before), JSON.stringify(before));
    await core.deleteNamespacedPod({ name, namespace: PROBE_NAMESPACE, gracePeriodSeconds: 0 });
    await waitFor(async () => !owned(await agentTargets(node)), {
      timeout: 30_000,
      interval: 250,
      message: "its targets to go",
    });
  });

  await t.step(
    "helm test fails naming the node and why when its agent is not attached",
    async () => {
      // A kubelet cgroup that does not exist: the new agent runs but attaches nowhere.
      const missing = "/sys/fs/cgroup/lace-test-no-kubelet";
      await upgrade("--set", `node.kubeletCgroupPath=${missing}`, "--set", "tests.wait=5s");
      await waitFor(async () => {
        const list = await core.listNamespacedPod({ namespace: "lace-system" });
        return list.items.some((p) =>
          p.spec?.nodeName === node.name && !p.metadata?.deletionTimestamp &&
          p.spec.containers[0].env?.some((e) =>
            e.name === "LACE_KUBELET_CGROUP" && e.value === missing
          ) &&
          p.status?.containerStatuses?.[0]?.state?.running !== undefined
        );
      }, { timeout: 120_000, interval: 250, message: "the agent told that cgroup to run" });
      const run = await helmTest(node);
      try {
        assert.equal(run.success, false, run.text);
        assert.match(run.text, /pod lace-test failed/);
        // Its pod stays for kubectl logs; what lace status printed there (the runtime's log
        // lines without their time and stream):
        const pod = await core.readNamespacedPod({ name: "lace-test", namespace: "lace-system" });
        assert.equal(pod.status?.phase, "Failed");
        const log = (await containerLog(node, pod, "status"))
          .replace(/^\S+ std(?:out|err) [FP] /gm, "");
        console.log(`helm test on a detached agent:\n${log}`);
        assert.match(
          log,
          new RegExp(
            `^${node.name}\\s+lace-\\S+\\s+no\\s+-\\s+the pod is not Ready.*not ready: .*not attached`,
            "m",
          ),
        );
        assert.match(
          log,
          /^Not every node's agent is attached and ready: 1 of 1 agent pods failing/m,
        );
      } finally {
        // The next step takes Lace off the node, which waits for lace-system to be empty.
        await core.deleteNamespacedPod({
          name: "lace-test",
          namespace: "lace-system",
          gracePeriodSeconds: 0,
        }).catch(() => {});
      }
    },
  );

  await t.step(
    "without the agent the same pods never become Ready and liveness restarts them",
    async () => {
      const old = await core.listNamespacedPod({ namespace: PROBE_NAMESPACE });
      await deletePods(core, old.items.map((p) => p.metadata!.name!));
      await removeLace(node);
      const created = new Map([
        ...await createProbePods(core, node, "control"),
        ...await createProbePods(core, node, "control6", "ipv6"),
      ]);
      // Every sample is kept: an assertion inside waitFor would only count as "not yet".
      const everReady = new Set<string>();
      const restarted = await waitFor(async () => {
        const list = await core.listNamespacedPod({ namespace: PROBE_NAMESPACE });
        for (const pod of list.items.filter(isReady)) everReady.add(pod.metadata!.name!);
        return list.items.length === created.size && list.items.every((p) => restarts(p) > 0)
          ? list.items
          : undefined;
      }, { timeout: 60_000, interval: 250, message: "liveness to restart the control pods" }).catch(
        onFailure,
      );
      assert.deepEqual([...everReady], [], "pods became Ready without the agent");
      console.log(
        `without Lace: no pod Ready, restarts ${
          JSON.stringify(Object.fromEntries(restarted.map((p) => [p.metadata!.name, restarts(p)])))
        }`,
      );
      await deletePods(core, created.keys());
    },
  );
});
