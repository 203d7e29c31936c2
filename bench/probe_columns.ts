/**
 * Figure 10's parts that do not measure: the probed pods of each column (flat, Lace, exec), the
 * kubelet's probe metrics read from its /metrics/probes text, CPU from a cgroup's cpu.stat, and
 * the rows and goals from what a column measured.
 */
import type { V1Container, V1Pod, V1Probe } from "@kubernetes/client-node";
import { atMost, fmt, type Goal, type Row } from "./report.ts";
import { median } from "./stats.ts";

/** The columns, in the order they run on the node. */
export const COLUMNS = ["flat", "exec", "lace"] as const;
export type Column = typeof COLUMNS[number];

export const COLUMN_LABEL: Record<Column, string> = {
  flat: "flat (host routes to pods, no agent)",
  exec: "exec probes (isolated networks, no agent)",
  lace: "Lace (isolated networks, the chart's agent)",
};

/** The server's port in every probed pod. */
export const SERVER_PORT = 8080;

/** Lace ≤ this many times flat, in CPU per probe and in p99. */
export const LACE_OVER_FLAT_LIMIT = 1.1;

export interface ProbedPodOptions {
  name: string;
  namespace: string;
  node: string;
  /** The test network plugin's network label (tests/node/net_plugin.ts). */
  network: string;
  column: Column;
  /** agnhost's image (tests/node/images.ts), which holds curl for the exec column. */
  image: string;
}

/**
 * One probed pod: agnhost serving HTTP, with a startup and a readiness probe over HTTP and a
 * liveness probe over TCP, all every second. The exec column asks the same inside the container
 * (curl for HTTP, agnhost's connect for TCP), as a user without a route to the pod would.
 */
export function probedPod(o: ProbedPodOptions): V1Pod {
  const path = `/echo?msg=${o.name}`;
  const timing = { periodSeconds: 1, timeoutSeconds: 1 };
  const http = (p: string): V1Probe =>
    o.column === "exec"
      ? {
        exec: {
          command: ["curl", "-fsS", "-o", "/dev/null", `http://127.0.0.1:${SERVER_PORT}${p}`],
        },
      }
      : { httpGet: { path: p, port: SERVER_PORT } };
  const tcp: V1Probe = o.column === "exec"
    ? { exec: { command: ["/agnhost", "connect", `127.0.0.1:${SERVER_PORT}`, "--timeout=1s"] } }
    : { tcpSocket: { port: SERVER_PORT } };
  const server: V1Container = {
    name: "server",
    image: o.image,
    imagePullPolicy: "Never",
    args: ["netexec", `--http-port=${SERVER_PORT}`, "--udp-port=-1"],
    ports: [{ name: "http", containerPort: SERVER_PORT }],
    // Until agnhost listens the startup probe fails: counted apart from the hold's.
    startupProbe: { ...http(path), ...timing, failureThreshold: 120 },
    readinessProbe: { ...http(path), ...timing },
    livenessProbe: { ...tcp, ...timing, failureThreshold: 3 },
  };
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: o.name,
      namespace: o.namespace,
      labels: { "lace-test.io/network": o.network, "lace-bench/column": o.column },
    },
    spec: {
      nodeName: o.node,
      terminationGracePeriodSeconds: 0,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      containers: [server],
    },
  };
}

/** One sample of Prometheus' text format: name, labels, value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses Prometheus' text exposition format (comments skipped; malformed lines too). */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  const line = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
  const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  for (const raw of text.split("\n")) {
    if (raw.startsWith("#")) continue;
    const m = line.exec(raw.trim());
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(label)) labels[l[1]] = l[2].replace(/\\(.)/g, "$1");
    const value = Number(m[3]);
    if (!Number.isNaN(value)) samples.push({ name: m[1], labels, value });
  }
  return samples;
}

/** The kubelet's probe counts and durations of one namespace, summed over its pods. */
export interface ProbeCounts {
  /** prober_probe_total by result (successful, failed, unknown). */
  byResult: Record<string, number>;
  /** The same by probe type and result ("Liveness failed"). */
  byTypeAndResult: Record<string, number>;
  durationCount: number;
  durationSum: number;
}

/** What `samples` (the kubelet's /metrics/probes) say about the probes of pods in `namespace`. */
export function probeCounts(samples: Sample[], namespace: string): ProbeCounts {
  const counts: ProbeCounts = {
    byResult: {},
    byTypeAndResult: {},
    durationCount: 0,
    durationSum: 0,
  };
  for (const s of samples) {
    if (s.labels.namespace !== namespace) continue;
    if (s.name === "prober_probe_total") {
      const result = s.labels.result ?? "unknown";
      counts.byResult[result] = (counts.byResult[result] ?? 0) + s.value;
      const typed = `${s.labels.probe_type} ${result}`;
      counts.byTypeAndResult[typed] = (counts.byTypeAndResult[typed] ?? 0) + s.value;
    } else if (s.name === "prober_probe_duration_seconds_count") {
      counts.durationCount += s.value;
    } else if (s.name === "prober_probe_duration_seconds_sum") {
      counts.durationSum += s.value;
    }
  }
  return counts;
}

/** `after` − `before`: what happened between two reads. */
export function probeDelta(before: ProbeCounts, after: ProbeCounts): ProbeCounts {
  const minus = (a: Record<string, number>, b: Record<string, number>) =>
    Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v - (b[k] ?? 0)]));
  return {
    byResult: minus(after.byResult, before.byResult),
    byTypeAndResult: minus(after.byTypeAndResult, before.byTypeAndResult),
    durationCount: after.durationCount - before.durationCount,
    durationSum: after.durationSum - before.durationSum,
  };
}

/** Every probe counted, whatever its result. */
export function totalProbes(c: ProbeCounts): number {
  return Object.values(c.byResult).reduce((a, b) => a + b, 0);
}

/**
 * Single probes' durations (s) between two reads of the kubelet's metrics taken about a probe
 * period apart: a series (pod, container, probe type) whose count grew by exactly one gives that
 * probe's duration as the growth of its sum. The kubelet's prober_probe_duration_seconds has no
 * bucket but +Inf, so its own quantiles cannot be had otherwise.
 */
export function singleProbeDurations(
  before: Sample[],
  after: Sample[],
  namespace: string,
): number[] {
  const key = (s: Sample) => `${s.labels.pod}/${s.labels.container}/${s.labels.probe_type}`;
  const series = (samples: Sample[]) => {
    const out = new Map<string, { count: number; sum: number }>();
    for (const s of samples) {
      if (s.labels.namespace !== namespace) continue;
      const isCount = s.name === "prober_probe_duration_seconds_count";
      if (!isCount && s.name !== "prober_probe_duration_seconds_sum") continue;
      const entry = out.get(key(s)) ?? { count: NaN, sum: NaN };
      if (isCount) entry.count = s.value;
      else entry.sum = s.value;
      out.set(key(s), entry);
    }
    return out;
  };
  const [a, b] = [series(before), series(after)];
  const durations: number[] = [];
  for (const [k, next] of b) {
    const prev = a.get(k);
    if (prev && next.count - prev.count === 1) durations.push(next.sum - prev.sum);
  }
  return durations;
}

/** The q-quantile of `values` by nearest rank; NaN when there are none. */
export function quantile(values: number[], q: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** usage_usec of a cgroup v2 cpu.stat's text (the whole subtree's CPU time). */
export function cpuUsageUsec(cpuStat: string): number {
  const m = /^usage_usec (\d+)$/m.exec(cpuStat);
  if (!m) throw new Error(`cpu.stat has no usage_usec line: "${cpuStat.slice(0, 80)}"`);
  return Number(m[1]);
}

/** CPU seconds spent in the hold, by part of the node. */
export interface CpuParts {
  kubelet: number;
  /** containerd, its shims and every runc they start (one cgroup). */
  runtime: number;
  agent: number;
  /** The probed pods' containers (for exec: every probe's curl or connect too). */
  pods: number;
}

/** What one column measured over its hold. */
export interface ColumnMeasured {
  column: Column;
  pods: number;
  holdSeconds: number;
  /** Seconds from the first pod's creation until all were Ready, or the wait ended. */
  readySeconds: number;
  /** Pods Ready when the hold began (all, unless the wait for them ended first). */
  ready: number;
  cpu: CpuParts;
  probes: ProbeCounts;
  /** Single probes' durations sampled after the hold (singleProbeDurations), in seconds. */
  durations: { samples: number; p50: number; p99: number };
  /** Failed probes from creation until all were Ready (startup probes before the server listens). */
  failedBeforeReady: number;
  /** Every probe until all were Ready, by type and result. */
  failedBeforeReadyByType?: Record<string, number>;
  restarts: number;
  /** Seconds waited before the column for the runtime to settle from the previous one. */
  settledSeconds?: number;
  /** Which round of alternating flat and Lace columns (from 1), when there were several. */
  round?: number;
}

/** Probes that did not succeed: failed, or ended with an unknown result. */
export function failedOf(c: ProbeCounts): number {
  return (c.byResult.failed ?? 0) + (c.byResult.unknown ?? 0);
}

/** The node's CPU (kubelet, runtime, agent) in ms per 1,000 probes of the hold. */
export function nodeCpuPerThousand(m: ColumnMeasured): number {
  const probes = totalProbes(m.probes);
  return ((m.cpu.kubelet + m.cpu.runtime + m.cpu.agent) * 1000 * 1000) / probes;
}

/** The same with the pods' own CPU added (the exec column's probes run there). */
export function allCpuPerThousand(m: ColumnMeasured): number {
  const probes = totalProbes(m.probes);
  return ((m.cpu.kubelet + m.cpu.runtime + m.cpu.agent + m.cpu.pods) * 1000 * 1000) / probes;
}

/** " (Liveness failed 3, …)" when any probe failed, else "". */
function failedTypes(c: ProbeCounts): string {
  const failed = Object.entries(c.byTypeAndResult).filter(([k, v]) =>
    !k.endsWith("successful") && v
  );
  return failed.length ? ` (${failed.map(([k, v]) => `${k} ${fmt(v)}`).join(", ")})` : "";
}

function ms(seconds: number): string {
  return `${fmt(seconds * 1000)} ms`;
}

/**
 * The rows of every column measured at one pod count, and the goals judged on them: Lace ≤ 1.1×
 * flat in node CPU per probe and in p99, and no failed probe in the hold of any column (judged
 * only at `judgeFailuresAt` pods or more, the kubelet's default limit). `judge` false: rows only
 * (a smoke run).
 */
export function probeRowsAndGoals(
  measured: ColumnMeasured[],
  o: { judge: boolean; judgeFailuresAt: number },
): { rows: Row[]; goals: Goal[] } {
  const rows: Row[] = [];
  const goals: Goal[] = [];
  for (const m of measured) {
    const probes = totalProbes(m.probes);
    const failed = failedOf(m.probes);
    const { p50, p99, samples } = m.durations;
    const mean = m.probes.durationSum / m.probes.durationCount;
    const at = `${m.pods} pods, ${COLUMN_LABEL[m.column]}${m.round ? `, round ${m.round}` : ""}`;
    rows.push({
      measurement: `${at}: node CPU per 1,000 probes (kubelet + containerd/shims/runc + agent)`,
      value: `${fmt(nodeCpuPerThousand(m))} ms (kubelet ${ms(m.cpu.kubelet)}, runtime ${
        ms(m.cpu.runtime)
      }, agent ${ms(m.cpu.agent)} over ${fmt(probes)} probes in ${fmt(m.holdSeconds)} s)`,
      goal: m.column === "lace" ? `≤ ${LACE_OVER_FLAT_LIMIT}× flat` : undefined,
    });
    rows.push({
      measurement: `  with the pods' own CPU`,
      value: `${fmt(allCpuPerThousand(m))} ms (pods ${ms(m.cpu.pods)})`,
    });
    rows.push({
      measurement:
        `  prober_probe_duration_seconds: p50 / p99 of single probes; mean over the hold`,
      value: `${ms(p50)} / ${ms(p99)} (${fmt(samples)} probes); ${ms(mean)}`,
      goal: m.column === "lace" ? `p99 ≤ ${LACE_OVER_FLAT_LIMIT}× flat` : undefined,
    });
    rows.push({
      measurement: `  probes in the hold by result; failed before all Ready; restarts`,
      value: `${Object.entries(m.probes.byResult).map(([k, v]) => `${k} ${fmt(v)}`).join(", ")}${
        failedTypes(m.probes)
      }; ${m.failedBeforeReady}; ${m.restarts} (${
        m.ready === m.pods ? "all" : `only ${m.ready} of ${m.pods}`
      } Ready after ${fmt(m.readySeconds)} s)`,
      goal: m.pods >= o.judgeFailuresAt ? "0 failed" : undefined,
    });
    if (o.judge && m.pods >= o.judgeFailuresAt) {
      goals.push({
        ...atMost("probes", `failed probes in the hold, ${at}`, failed + m.restarts, 0, ""),
        measured: `${fmt(failed)} failed, ${m.restarts} restarts, ${m.ready} of ${m.pods} Ready`,
        ...(failed + m.restarts === 0 && m.ready === m.pods ? { met: true } : {
          met: false,
          reason: "probes failed, containers restarted or pods were not Ready",
        }),
      });
    }
  }
  const flats = measured.filter((m) => m.column === "flat");
  const laces = measured.filter((m) => m.column === "lace");
  if (flats.length > 1 || laces.length > 1) {
    // Columns alternated in rounds: each round's Lace beside the flat column next to it.
    rows.push({
      measurement: `${measured[0].pods} pods: Lace / flat by round, CPU per probe and p99`,
      value: laces.map((lace, i) => {
        const flat = flats[Math.min(i, flats.length - 1)];
        return `${(nodeCpuPerThousand(lace) / nodeCpuPerThousand(flat)).toFixed(2)}× and ${
          (lace.durations.p99 / flat.durations.p99).toFixed(2)
        }×`;
      }).join("; "),
    });
  }
  if (o.judge && flats.length && laces.length) {
    // The median of each column's rounds: one column's CPU varies ~2× between like holds.
    const of = (ms: ColumnMeasured[], f: (m: ColumnMeasured) => number) => median(ms.map(f));
    const [laceCpu, flatCpu] = [of(laces, nodeCpuPerThousand), of(flats, nodeCpuPerThousand)];
    const cpu = laceCpu / flatCpu;
    const rounds = laces.length > 1 || flats.length > 1
      ? `, medians of ${laces.length} and ${flats.length} columns`
      : "";
    // One column of each is a single draw: a miss says so, and how to judge on rounds.
    const missed = rounds ? undefined : `one column of each, and like columns differ by about ` +
      `10 % in CPU and 30 % in p99 between holds: --probe-rounds 3 judges on medians`;
    goals.push({
      ...atMost(
        "probes",
        `node CPU per probe at ${laces[0].pods} pods, Lace / flat`,
        Math.round(cpu * 100) / 100,
        LACE_OVER_FLAT_LIMIT,
        "×",
        missed,
      ),
      measured: `${cpu.toFixed(2)}× (${fmt(laceCpu)} vs ${fmt(flatCpu)} ms per 1,000${rounds})`,
    });
    const [lp99, fp99] = [of(laces, (m) => m.durations.p99), of(flats, (m) => m.durations.p99)];
    const p99 = lp99 / fp99;
    goals.push({
      ...atMost(
        "probes",
        `probe duration p99 at ${laces[0].pods} pods, Lace / flat`,
        Math.round(p99 * 100) / 100,
        LACE_OVER_FLAT_LIMIT,
        "×",
        missed,
      ),
      measured: `${p99.toFixed(2)}× (${ms(lp99)} vs ${ms(fp99)}${rounds})`,
    });
  }
  return { rows, goals };
}
