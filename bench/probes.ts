/**
 * Figure 10, probes on the real kubelet (opt-in: `--only probes`, since it needs the real node's
 * tools of scripts/setup.sh): one real node of tests/node/ (kubelet, containerd, runc in node
 * namespaces), and the same probed pods in three columns, one after the other on that node (each
 * once the runtime has settled from the one before; at each pod count flat and Lace, in rounds
 * with `--probe-rounds`, then exec):
 * - flat: every pod in one network the node's main table routes to (what a single-network
 *   cluster pays), no agent on the node;
 * - exec: every pod in an isolated network of its own, each probe an exec probe doing the same
 *   check inside the container (the agent is installed by then but has nothing to mark, and its
 *   CPU is not counted);
 * - Lace: the same isolated networks, the chart's agent marking the kubelet's probes.
 * For each column and pod count: all pods Ready, then a hold during which the kubelet's
 * /metrics/probes and the cgroups' cpu.stat are read at both ends. The node (its cgroups,
 * namespaces, processes) goes on the run's cleanup, so an interrupted run removes it too.
 */
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { dirname, join } from "node:path";
import { installLace, removeLace } from "../tests/node/chart.ts";
import { CGROUP_V1, cgroupPids } from "../tests/node/cgroups.ts";
import { IMAGES } from "../tests/node/images.ts";
import { bridgeAddress4, NETWORKS, POD_SUBNET4 } from "../tests/node/network.ts";
import { type Node, startNode } from "../tests/node/node.ts";
import { isReady, restarts } from "../tests/node/pod_checks.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";
import { errorChain } from "../lib/text/error_chain.ts";
import type { BenchOptions } from "./main.ts";
import {
  type Column,
  type ColumnMeasured,
  failedOf,
  probeDelta,
  probedPod,
  probeRowsAndGoals,
} from "./probe_columns.ts";
import {
  agentPods,
  type Cgroups,
  containerCgroups,
  readCpu,
  readProbes,
  removePods,
  sampleDurations,
  sandboxesRemoved,
  settleRuntime,
} from "./probe_node.ts";
import type { FigureResult, Goal, Row } from "./report.ts";

/** The kubelet's default pod limit: the count at which no failed probe is the goal. */
export const KUBELET_DEFAULT_MAX_PODS = 110;

/** How long a column's pods may take to be all Ready before they are measured as they are. */
const READY_WAIT_MS = 5 * 60_000;

/** The network of pod `i` of an isolated column: exec and Lace use the same ones. */
function isolatedNetwork(i: number): string {
  return `iso-${i}`;
}

export async function probesFigure(o: BenchOptions, c: CleanupStack): Promise<FigureResult> {
  const sizes = o.probePods;
  const hold = o.probeHoldSeconds;
  console.error("  starting a real node (images, control plane, containerd, kubelet)…");
  const node = await startNode({
    chainLace: false,
    networkPerNamespace: true,
    kubeletApi: true,
    // The probed pods, the agent, and room for a column's pods still terminating.
    maxPods: Math.max(...sizes) + 10,
  });
  c.push(() => node.close());
  console.error(`  node ${node.name} is Ready (its run directory ${node.dir})`);
  const core = node.controlPlane.adminConfig().makeApiClient(CoreV1Api);

  // containerd, its shims and their runc in one cgroup v2 directory of their own, for cpu.stat.
  const v2Root = dirname(node.kubeletCgroup);
  const runtimeCgroup = join(v2Root, "runtime");
  await Deno.mkdir(runtimeCgroup);
  for (const pid of await cgroupPids(join(CGROUP_V1, "pids", node.name, "node", "containerd"))) {
    await Deno.writeTextFile(join(runtimeCgroup, "cgroup.procs"), String(pid));
  }
  const cgroups: Cgroups = { runtime: runtimeCgroup, kubelet: node.kubeletCgroup, agent: [] };

  const measured: ColumnMeasured[] = [];
  const loads: Record<string, number[]> = {};
  const failed: string[] = [];
  // A column that fails is reported and its pods removed; the next columns still run.
  /** The columns in the order they ran, as `column-pods`. */
  const ran: string[] = [];
  const run = async (column: Column, pods: number, round?: number) => {
    // A column's name, and its namespace's: `lace-110`, or `lace-110-r2` in rounds.
    const name = `${column}-${pods}${round ? `-r${round}` : ""}`;
    console.error(`  ${name}…`);
    ran.push(name);
    try {
      const m = await runColumn(core, node, cgroups, column, pods, hold, `bench-${name}`);
      if (round) m.measured.round = round;
      loads[name] = m.loads;
      measured.push(m.measured);
      // Each column as it ends, so a run cut short still says what it measured.
      console.error(
        `  ${JSON.stringify({ ...m.measured, probes: m.measured.probes.byTypeAndResult })}`,
      );
    } catch (e) {
      const why = `${column} at ${pods} pods: ${errorChain(e)}`;
      console.error(`  failed: ${why}`);
      failed.push(why);
      await removePods(core, `bench-${name}`).catch((e) =>
        failed.push(`${column} at ${pods} pods, removing its pods: ${errorChain(e)}`)
      );
    }
  };
  // The agent is on the node for the Lace columns only: a flat column measures a node without it
  // (no hook on the kubelet's cgroup), so the chart is removed again after each Lace column.
  let installed = false;
  const agentOnNode = async (want: boolean) => {
    if (want === installed) return;
    console.error(want ? "  installing the chart…" : "  removing the chart and its pins…");
    if (want) {
      await installLace(node);
      cgroups.agent = containerCgroups(await agentPods(core));
    } else {
      await removeLace(node);
      cgroups.agent = [];
    }
    installed = want;
  };
  const runFlat = async (pods: number, round?: number) => {
    await agentOnNode(false);
    // The node's main table routes to the flat network only while that column runs.
    const flat = NETWORKS[0];
    const route = [POD_SUBNET4, "dev", flat.bridge, "src", bridgeAddress4(flat)];
    await node.exec(["ip", "route", "add", ...route]);
    try {
      await run("flat", pods, round);
    } finally {
      await node.exec(["ip", "route", "del", ...route]);
    }
  };
  const runLace = async (pods: number, round?: number) => {
    await agentOnNode(true);
    await run("lace", pods, round);
  };
  // Flat and Lace side by side at each count, in rounds whose order alternates (flat first, then
  // Lace first) so a drift of the node over the run lands on both; exec last, since its pods,
  // which may never be all Ready, leave the runtime busiest.
  const columns = new Set(o.probeColumns);
  for (const pods of sizes) {
    for (let round = 0; round < o.probeRounds; round++) {
      const flatThenLace: [Column, (pods: number, round?: number) => Promise<void>][] = [
        ["flat", runFlat],
        ["lace", runLace],
      ];
      const order = round % 2 ? flatThenLace.reverse() : flatThenLace;
      for (const [column, step] of order) {
        if (columns.has(column)) await step(pods, o.probeRounds > 1 ? round + 1 : undefined);
      }
    }
  }
  if (columns.has("exec")) {
    // The agent stays (it has nothing to mark: exec probes connect nowhere); its CPU is not
    // counted.
    await agentOnNode(true);
    cgroups.agent = [];
    for (const pods of sizes) await run("exec", pods);
  }

  const rows: Row[] = [];
  const goals: Goal[] = [];
  for (const pods of sizes) {
    const atSize = measured.filter((m) => m.pods === pods);
    const r = probeRowsAndGoals(atSize, {
      judge: !o.quick,
      judgeFailuresAt: KUBELET_DEFAULT_MAX_PODS,
    });
    rows.push(...r.rows);
    goals.push(...r.goals);
  }
  for (const why of failed) rows.push({ measurement: "column FAILED", value: why });
  if (failed.length) {
    goals.push({
      figure: "probes",
      name: "every column measured",
      target: "all",
      measured: `${failed.length} failed`,
      met: false,
      reason: failed.join("; "),
    });
  }
  rows.push({
    measurement: "load average (1 min) at each hold's start and end",
    value: Object.entries(loads).map(([k, [a, b]]) => `${k} ${a.toFixed(1)}→${b.toFixed(1)}`)
      .join(", "),
  });
  return {
    name: "probes",
    title: "10. Probes on the real kubelet",
    rows,
    goals,
    data: {
      sizes,
      holdSeconds: hold,
      order: ran,
      loads,
      failed,
      columns: measured,
    },
  };
}

/** One column at one pod count: create, wait for Ready, hold and measure, delete. */
async function runColumn(
  core: CoreV1Api,
  nodeRef: Node,
  cg: Cgroups,
  column: Column,
  pods: number,
  holdSeconds: number,
  namespace: string,
): Promise<{ measured: ColumnMeasured; loads: number[] }> {
  const node = nodeRef.name;
  const sandboxesSeconds = await sandboxesRemoved(core, nodeRef);
  const settledSeconds = sandboxesSeconds + await settleRuntime(cg.runtime);
  console.error(
    `  the runtime settled in ${settledSeconds.toFixed(0)} s (${
      sandboxesSeconds.toFixed(0)
    } s until the earlier pods' sandboxes were removed)`,
  );
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const specs: V1Pod[] = [];
  for (let i = 0; i < pods; i++) {
    specs.push(probedPod({
      name: `p${i}`,
      namespace,
      node,
      network: column === "flat" ? NETWORKS[0].name : isolatedNetwork(i),
      column,
      image: IMAGES.agnhost,
    }));
  }
  const t0 = performance.now();
  for (const body of specs) await core.createNamespacedPod({ namespace, body });
  // Pods that cannot all be Ready at once (exec probes timing out on a busy node) are measured
  // as they are after READY_WAIT_MS, and the row says how many were Ready.
  let ready = 0;
  while (true) {
    const list = await core.listNamespacedPod({ namespace });
    ready = list.items.filter(isReady).length;
    if (ready === pods || performance.now() - t0 > READY_WAIT_MS) break;
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
  const readySeconds = (performance.now() - t0) / 1000;

  const loads = [Deno.loadavg()[0]];
  const podDirs = containerCgroups((await core.listNamespacedPod({ namespace })).items);
  const [probesBefore, cpuBefore] = [
    await readProbes(core, node, namespace),
    await readCpu(cg, podDirs),
  ];
  const h0 = performance.now();
  await new Promise((resolve) => setTimeout(resolve, holdSeconds * 1000));
  const [probesAfter, cpuAfter] = [
    await readProbes(core, node, namespace),
    await readCpu(cg, podDirs),
  ];
  const held = (performance.now() - h0) / 1000;
  loads.push(Deno.loadavg()[0]);
  const durations = await sampleDurations(core, node, namespace, Math.min(30, holdSeconds));
  const list = await core.listNamespacedPod({ namespace });
  const restarted = list.items.reduce((sum, p) => sum + restarts(p), 0);

  const seconds = (k: keyof typeof cpuAfter) => (cpuAfter[k] - cpuBefore[k]) / 1e6;
  const [kubelet, runtime, agent] = [seconds("kubelet"), seconds("runtime"), seconds("agent")];
  const measured: ColumnMeasured = {
    column,
    pods,
    holdSeconds: held,
    readySeconds,
    ready,
    cpu: { kubelet, runtime, agent, pods: seconds("pods") },
    probes: probeDelta(probesBefore, probesAfter),
    durations,
    failedBeforeReady: failedOf(probesBefore),
    failedBeforeReadyByType: probesBefore.byTypeAndResult,
    restarts: restarted,
    settledSeconds,
  };

  await removePods(core, namespace);
  return { measured, loads };
}
