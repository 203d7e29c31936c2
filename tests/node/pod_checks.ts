/**
 * What the real-node test reads and does to the probe pods (probe_pods.ts) through the API and the
 * kubelet's log files: readiness, restarts, failed probes, which pod answered, the agent's targets.
 */
import type { CoreV1Api, V1Pod } from "@kubernetes/client-node";
import assert from "node:assert/strict";
import { join } from "node:path";
import type { TargetView } from "../../lib/agent_api/views.ts";
import { NETWORKS } from "./network.ts";
import type { Node } from "./node.ts";
import { PROBE_NAMESPACE, probeMessage, probePod } from "./probe_pods.ts";
import { waitFor } from "../helpers/wait.ts";

/** Whether the pod's Ready condition is True. */
export function isReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;
}

/** Restarts of all the pod's containers, init containers included. */
export function restarts(pod: V1Pod): number {
  const statuses = [
    ...(pod.status?.containerStatuses ?? []),
    ...(pod.status?.initContainerStatuses ?? []),
  ];
  return statuses.reduce((sum, s) => sum + s.restartCount, 0);
}

/** The text of a container's log file as the kubelet writes it under podLogsDir. */
export async function containerLog(node: Node, pod: V1Pod, container: string): Promise<string> {
  const dir = join(
    node.dir,
    "pod-logs",
    `${pod.metadata!.namespace}_${pod.metadata!.name}_${pod.metadata!.uid}`,
    container,
  );
  let text = "";
  for await (const entry of Deno.readDir(dir)) {
    text += await Deno.readTextFile(join(dir, entry.name));
  }
  return text;
}

/** Unhealthy events and restarted containers of the probe pods, except those in `except`. */
export async function failedProbes(
  core: CoreV1Api,
  except: Set<string> = new Set(),
): Promise<string[]> {
  const events = await core.listNamespacedEvent({ namespace: PROBE_NAMESPACE });
  const failures = events.items
    .filter((e) => e.reason === "Unhealthy" && !except.has(e.involvedObject.name!))
    .map((e) => `${e.involvedObject.name}: ${e.message}`);
  const pods = await core.listNamespacedPod({ namespace: PROBE_NAMESPACE });
  for (const pod of pods.items) {
    if (!except.has(pod.metadata!.name!) && restarts(pod) > 0) {
      failures.push(`${pod.metadata!.name}: ${restarts(pod)} restarts`);
    }
  }
  return failures;
}

/** The agent pod on the node once it is Ready, other than the pod with uid `not`. */
export async function readyAgentPod(
  core: CoreV1Api,
  node: Pick<Node, "name">,
  not?: string,
): Promise<V1Pod> {
  return await waitFor(async () => {
    const list = await core.listNamespacedPod({ namespace: "lace-system" });
    return list.items.find((p) =>
      p.spec?.nodeName === node.name && p.metadata?.uid !== not && isReady(p) &&
      !p.metadata?.deletionTimestamp
    );
  }, { timeout: 120_000, interval: 250, message: "a Ready agent pod" });
}

/**
 * Creates one probe pod in a network, waits until it is Ready, prints how long that took, and
 * checks that no probe failed meanwhile, its own included.
 */
export async function newPodBecomesReady(
  core: CoreV1Api,
  node: Node,
  name: string,
  network: number,
  after: string,
) {
  const began = performance.now();
  await core.createNamespacedPod({
    namespace: PROBE_NAMESPACE,
    body: probePod({
      name,
      node: node.name,
      network: NETWORKS[network].name,
      portOffset: 100 * network,
    }),
  });
  let running: number | undefined;
  await waitFor(async () => {
    const pod = await core.readNamespacedPod({ name, namespace: PROBE_NAMESPACE });
    if (running === undefined && pod.status?.phase === "Running") {
      running = Math.round(performance.now() - began);
    }
    return isReady(pod);
  }, { timeout: 90_000, interval: 250, message: `pod ${name} to be Ready` });
  console.log(
    `${after}: new pod Ready in ${Math.round(performance.now() - began)} ms ` +
      `(Running after ${running} ms)`,
  );
  assert.deepEqual(await failedProbes(core), []);
}

/** The probe targets the agent reports (`lace targets --json` on the node). */
export async function agentTargets(node: Node): Promise<TargetView[]> {
  const out = await node.exec([
    "/opt/cni/bin/lace",
    "targets",
    "--json",
  ]);
  return JSON.parse(out) as TargetView[];
}

/** The number of probes of its own a pod's server container has logged so far. */
export async function ownProbes(node: Node, core: CoreV1Api, name: string): Promise<number> {
  return ownProbesOf(node, await core.readNamespacedPod({ name, namespace: PROBE_NAMESPACE }));
}

/** The same for a pod already read (no API call: usable while the API server is down). */
export async function ownProbesOf(node: Node, pod: V1Pod): Promise<number> {
  const log = await containerLog(node, pod, "server");
  return log.split(probeMessage(pod.metadata!.name!, "server")).length - 1;
}

/**
 * Asserts that no probe pod's decoy (probe_pods.ts) was reached: it listens on the other
 * networks' probe ports, so a probe delivered into the wrong pod would be logged there. Waits
 * until each decoy logs that it listens, so an empty log cannot pass for an untouched one.
 */
export async function decoysUntouched(node: Node, pods: V1Pod[]): Promise<void> {
  for (const pod of pods) {
    const log = await waitFor(async () => {
      const text = await containerLog(node, pod, "decoy");
      return /listening port=/.test(text) ? text : undefined;
    }, { timeout: 15_000, interval: 250, message: `${pod.metadata!.name}'s decoy to listen` });
    const reached = log.split("\n").filter((line) => /connection port=|request port=/.test(line));
    assert.deepEqual(reached, [], `${pod.metadata!.name}'s decoy was reached`);
  }
}

/**
 * Creates a probe pod `${prefix}-<network>` in each network (IPv6-only ones with `family`);
 * returns each one's creation time.
 */
export async function createProbePods(
  core: CoreV1Api,
  node: Node,
  prefix: string,
  family?: "ipv6",
) {
  const specs = NETWORKS.map((network, index) =>
    probePod({
      name: `${prefix}-${network.name}`,
      node: node.name,
      network: network.name,
      portOffset: 100 * index,
      family,
    })
  );
  const created = new Map<string, number>();
  for (const pod of specs) {
    await core.createNamespacedPod({ namespace: PROBE_NAMESPACE, body: pod });
    created.set(pod.metadata!.name!, performance.now());
  }
  return created;
}

/** Deletes the probe pods at once and waits until the probe namespace holds none. */
export async function deletePods(core: CoreV1Api, names: Iterable<string>) {
  for (const name of names) {
    await core.deleteNamespacedPod({ name, namespace: PROBE_NAMESPACE, gracePeriodSeconds: 0 })
      .catch(() => {});
  }
  await waitFor(async () => {
    const list = await core.listNamespacedPod({ namespace: PROBE_NAMESPACE });
    return list.items.length === 0;
  }, { timeout: 60_000, interval: 250, message: "the probe pods to be gone" });
}

/**
 * Waits until every pod `created` names (probe namespace) is Ready; returns them and how long
 * each took from its creation.
 */
export async function waitUntilReady(core: CoreV1Api, created: Map<string, number>) {
  const readyAfter: Record<string, number> = {};
  const pods = await waitFor(async () => {
    const list = await core.listNamespacedPod({ namespace: PROBE_NAMESPACE });
    const mine = list.items.filter((p) => created.has(p.metadata!.name!));
    for (const pod of mine) {
      const name = pod.metadata!.name!;
      if (isReady(pod) && readyAfter[name] === undefined) {
        readyAfter[name] = Math.round(performance.now() - created.get(name)!);
      }
    }
    return mine.length === created.size && mine.every(isReady) ? mine : undefined;
  }, { timeout: 120_000, interval: 250, message: `pods ${[...created.keys()]} to be Ready` });
  return { pods, readyAfter };
}

/**
 * The log directories of the agent containers of lace-system's pods on the node, with their pod's
 * directory name; other pods there (helm test's, netcheck's runner) have no agent container.
 */
async function* agentLogDirs(node: Node): AsyncGenerator<{ pod: string; dir: string }> {
  for await (const entry of Deno.readDir(join(node.dir, "pod-logs"))) {
    if (!entry.name.startsWith("lace-system_")) continue;
    const dir = join(node.dir, "pod-logs", entry.name, "agent");
    if (await Deno.stat(dir).then(() => true, () => false)) yield { pod: entry.name, dir };
  }
}

/** Everything the agent pods on the node have logged so far, oldest pod first. */
export async function agentLog(node: Node): Promise<string> {
  let text = "";
  for await (const { dir } of agentLogDirs(node)) {
    for await (const file of Deno.readDir(dir)) {
      text += await Deno.readTextFile(join(dir, file.name));
    }
  }
  return text;
}

/**
 * A `.catch()` handler for a node test's waits: prints the node's logs and the tail of every
 * agent log, then rethrows.
 */
export function failWithLogs(node: Node): (error: unknown) => Promise<never> {
  return async (error: unknown) => {
    console.error(await node.logs(40));
    for await (const { pod, dir } of agentLogDirs(node)) {
      for await (const file of Deno.readDir(dir)) {
        const text = await Deno.readTextFile(join(dir, file.name));
        console.error(`--- agent log ${pod}/${file.name} ---\n${text.slice(-6000)}`);
      }
    }
    throw error;
  };
}

/**
 * Each pod's own probes served between two counts (ownProbesOf), against the readiness period
 * of 1 s: a tenth of slack for the kubelet's own scheduling on a loaded machine; a gap of failed
 * probes (the agent losing targets) is seconds long. Probes that fail cannot always be seen as
 * Events (the API server may be down, and the kubelet sends them late), but they are missing
 * here. Returns the counts by pod name.
 */
export function assertProbedThroughout(
  pods: V1Pod[],
  before: number[],
  after: number[],
  seconds: number,
): Record<string, number> {
  const counts = Object.fromEntries(
    pods.map((pod, i) => [pod.metadata!.name!, after[i] - before[i]]),
  );
  for (const [name, count] of Object.entries(counts)) {
    assert.ok(
      count >= Math.floor(seconds * 0.9) - 1,
      `${name} served ${count} probes in ${seconds.toFixed(1)} s`,
    );
  }
  return counts;
}

/** The programs attached to the kubelet's cgroup: attach type → program id and tag. */
export async function kubeletPrograms(
  node: Node,
): Promise<Record<string, { id: number; tag: string }>> {
  const attached = JSON.parse(
    await node.exec(["bpftool", "-j", "cgroup", "show", node.kubeletCgroup]),
  ) as { id: number; attach_type: string }[];
  const programs: Record<string, { id: number; tag: string }> = {};
  for (const { id, attach_type } of attached) {
    const info = JSON.parse(await node.exec(["bpftool", "-j", "prog", "show", "id", String(id)]));
    programs[attach_type] = { id, tag: info.tag };
  }
  return programs;
}

/**
 * The kubelet's own log (its --v=2 output): what it did that Events may not say, as a probe's
 * failure after the kubelet's event spam filter has had its fill of the pod's Events.
 */
export async function kubeletLog(node: Node): Promise<string> {
  return await Deno.readTextFile(join(node.dir, "kubelet.log"));
}
