/**
 * What figure 10 (bench/probes.ts) reads and waits for on the real node: CPU from the cgroups of
 * the kubelet, the runtime, the agent and the pods; the kubelet's probe metrics and single
 * probes' durations; the agent's pods; and, between columns, the pods gone, their sandboxes
 * removed and the runtime settled.
 */
import type { CoreV1Api, V1Pod } from "@kubernetes/client-node";
import { join } from "node:path";
import { CGROUP_V1 } from "../tests/node/cgroups.ts";
import type { Node } from "../tests/node/node.ts";
import { waitFor } from "../tests/helpers/wait.ts";
import {
  cpuUsageUsec,
  parseSamples,
  probeCounts,
  quantile,
  type Sample,
  singleProbeDurations,
} from "./probe_columns.ts";

/** Every probe's period, and the interval of the reads that time single probes. */
export const PROBE_PERIOD_MS = 1000;

export interface Cgroups {
  /** cgroup v2 directories. */
  runtime: string;
  kubelet: string;
  /** The agent's containers' cpuacct directories, none while no agent runs. */
  agent: string[];
}

/**
 * The cpuacct (v1) directories of the pods' containers: without per-QOS cgroups the kubelet names
 * no parent, so containerd puts each container in k8s.io/<container id>.
 */
export function containerCgroups(pods: V1Pod[]): string[] {
  return pods.flatMap((pod) =>
    (pod.status?.containerStatuses ?? []).flatMap((c) => {
      // A container not started yet has no id, and no CPU to count.
      const id = c.containerID?.replace(/^containerd:\/\//, "");
      return id ? [join(CGROUP_V1, "cpuacct", "k8s.io", id)] : [];
    })
  );
}

/** CPU time in µs: cpu.stat of the v2 directories, cpuacct.usage (ns) of the v1 ones. */
export async function readCpu(cg: Cgroups, pods: string[]) {
  const v2 = async (dir: string) => cpuUsageUsec(await Deno.readTextFile(join(dir, "cpu.stat")));
  const v1 = async (dirs: string[]) => {
    let sum = 0;
    for (const dir of dirs) {
      // A container restarted in the hold has a new cgroup: its CPU is then not known.
      const text = await Deno.readTextFile(join(dir, "cpuacct.usage")).catch((e) => {
        if (e instanceof Deno.errors.NotFound) return "NaN";
        throw e;
      });
      sum += Number(text);
    }
    return sum / 1000;
  };
  return {
    pods: await v1(pods),
    kubelet: await v2(cg.kubelet),
    runtime: await v2(cg.runtime),
    agent: await v1(cg.agent),
  };
}

/** How long a read of the kubelet's metrics is tried again, and the pause between two tries. */
export const KUBELET_READ = { timeoutMs: 30_000, intervalMs: 5000 };

/**
 * The kubelet's /metrics/probes, through the API server. On a node that exec probes load to 200
 * and more, one such read can time out while the kubelet is starved; it is tried again (waitFor)
 * rather than losing the column's measurement.
 */
export async function probeSamples(
  core: Pick<CoreV1Api, "connectGetNodeProxyWithPath">,
  node: string,
  retry = KUBELET_READ,
): Promise<Sample[]> {
  const { text } = await waitFor(
    async () => ({
      text: String(await core.connectGetNodeProxyWithPath({ name: node, path: "metrics/probes" })),
    }),
    {
      timeout: retry.timeoutMs,
      interval: retry.intervalMs,
      message: `the kubelet's metrics/probes on node ${node}, through the API server`,
    },
  );
  return parseSamples(text);
}

export async function readProbes(
  core: Pick<CoreV1Api, "connectGetNodeProxyWithPath">,
  node: string,
  namespace: string,
  retry = KUBELET_READ,
) {
  return probeCounts(await probeSamples(core, node, retry), namespace);
}

/**
 * Single probes' durations over `seconds`, from reads of the kubelet's metrics a probe period
 * apart (singleProbeDurations). Run after the hold: the reads cost the kubelet CPU.
 */
export async function sampleDurations(
  core: CoreV1Api,
  node: string,
  namespace: string,
  seconds: number,
) {
  const durations: number[] = [];
  let before = await probeSamples(core, node);
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, PROBE_PERIOD_MS));
    const after = await probeSamples(core, node);
    durations.push(...singleProbeDurations(before, after, namespace));
    before = after;
  }
  return {
    samples: durations.length,
    p50: quantile(durations, 0.5),
    p99: quantile(durations, 0.99),
  };
}

/** How long the kubelet may take to remove the sandboxes of pods deleted before a column. */
const SANDBOXES_MAX_MS = 180_000;

/**
 * Waits until containerd holds no more pod sandboxes than the node has pods, or SANDBOXES_MAX_MS;
 * returns the seconds waited. The pods of the column before are gone from the API when it ends,
 * but the kubelet removes their sandboxes (a CNI DEL each, every plugin of the chain run again)
 * only at its next garbage collection, up to a minute later: in the next column's hold.
 */
export async function sandboxesRemoved(core: CoreV1Api, node: Node): Promise<number> {
  const t0 = performance.now();
  const dir = join(node.dir, "containerd", "root", "io.containerd.grpc.v1.cri", "sandboxes");
  const sandboxes = async () => {
    let n = 0;
    try {
      for await (const _ of Deno.readDir(dir)) n++;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e; // no sandbox made yet
    }
    return n;
  };
  while (performance.now() - t0 < SANDBOXES_MAX_MS) {
    const onNode = await core.listPodForAllNamespaces({
      fieldSelector: `spec.nodeName=${node.name}`,
    });
    if (await sandboxes() <= onNode.items.length) break;
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
  return (performance.now() - t0) / 1000;
}

/** A runtime below this share of one CPU over SETTLE_WINDOW_MS has finished the last cleanup. */
const SETTLE_SHARE = 0.05;
const SETTLE_WINDOW_MS = 5000;
const SETTLE_MAX_MS = 180_000;

/**
 * Waits until containerd, its shims and runc are nearly idle (the previous column's pods' removal
 * and garbage collection done), or SETTLE_MAX_MS; returns the seconds waited.
 */
export async function settleRuntime(runtime: string): Promise<number> {
  const t0 = performance.now();
  const usage = async () => cpuUsageUsec(await Deno.readTextFile(join(runtime, "cpu.stat")));
  while (performance.now() - t0 < SETTLE_MAX_MS) {
    const before = await usage();
    await new Promise((resolve) => setTimeout(resolve, SETTLE_WINDOW_MS));
    if ((await usage()) - before < SETTLE_SHARE * SETTLE_WINDOW_MS * 1000) break;
  }
  return (performance.now() - t0) / 1000;
}

/** Deletes a column's pods and waits until they are gone (their networks' addresses freed). */
export async function removePods(core: CoreV1Api, namespace: string): Promise<void> {
  await core.deleteCollectionNamespacedPod({ namespace, gracePeriodSeconds: 0 });
  await waitFor(async () => (await core.listNamespacedPod({ namespace })).items.length === 0, {
    timeout: 10 * 60_000,
    interval: 2000,
    message: `the pods of ${namespace} to be gone`,
  });
}

/** The agent's pods (the chart's DaemonSet's), with their containers' ids. */
export async function agentPods(core: CoreV1Api): Promise<V1Pod[]> {
  const list = await core.listNamespacedPod({ namespace: "lace-system" });
  const agents = list.items.filter((p) => p.metadata?.ownerReferences?.[0]?.kind === "DaemonSet");
  if (!agents.length) throw new Error("No agent pod in lace-system after the chart's install");
  return agents;
}
