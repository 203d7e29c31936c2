/**
 * The real-node steps that show isolation: pods of three networks sharing their addresses are each
 * probed by the kubelet and answer only their own probes, and no process outside the kubelet's
 * cgroup reaches them.
 */
import type { V1Pod } from "@kubernetes/client-node";
import assert from "node:assert/strict";
import type { LaceNode } from "./lace_node.ts";
import {
  agentTargets,
  containerLog,
  createProbePods,
  decoysUntouched,
  isReady,
  restarts,
  waitUntilReady,
} from "./pod_checks.ts";
import { PROBE_NAMESPACE, probeMessage } from "./probe_pods.ts";
import { explainFailure, waitFor } from "../helpers/wait.ts";

/** Dual-stack then IPv6-only pods in every network: Ready, no failed probe, each answered by its own pod. */
export async function sharedAddressesAnswerOwnProbes(
  { node, core, onFailure }: LaceNode,
): Promise<void> {
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
}

/** A connect from outside the kubelet finds no route to any pod; the same from its cgroup is served. */
export async function onlyKubeletReachesPods({ node, core }: LaceNode): Promise<void> {
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
}
