/**
 * Figure 4, agent footprint: startup to ready, then RSS, CPU and wake-ups
 * over an idle window, for `lace agent` with 250 pods × 3 probes (directory
 * source, and Kubernetes API source against the test API server) beside a
 * bare `deno run` of an empty script and one that only imports the
 * Kubernetes client. Startups are measured one at a time; the idle window is
 * shared by all of them, so they see the same machine. Every process runs
 * with Lace's V8 flags (lib/os/v8_flags.ts), as the agent does on a node.
 */
import { fileURLToPath } from "node:url";
import { getFromAgent } from "../lib/agent_api/client.ts";
import { uninstall } from "../lib/datapath/pins.ts";
import { lines } from "../lib/os/process.ts";
import { SimCgroups } from "../lib/demo/cgroup.ts";
import { AgentProcess, mainCommand } from "./agent_process.ts";
import { startApiServerProcess } from "./json_child.ts";
import { benchPod, benchPodKeys, benchPodsDir } from "./pods.ts";
import { atMost, type FigureResult, fmt, type Goal, type Row } from "./report.ts";
import { round } from "./stats.ts";
import { V8_FLAGS, v8FlagsArg } from "../lib/os/v8_flags.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";
import {
  benchPinPath,
  cpuBetween,
  type ProcSample,
  sampleProcess,
  sleep,
  switchesBetween,
} from "./system.ts";

export interface FootprintOptions {
  quick: boolean;
  idleSeconds: number;
}

interface Subject {
  name: string;
  label: string;
  pid: number;
  startupMs: number;
}

const IDLE = fileURLToPath(new URL("./idle.ts", import.meta.url));
const MiB = 2 ** 20;

interface Baseline {
  pid: number;
  startupMs: number;
  stop(): Promise<void>;
}

/** Starts a baseline script; startup is the time until it printed "ready". */
async function startBaseline(args: string[]): Promise<Baseline> {
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", v8FlagsArg(), IDLE, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const stop = async () => {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
    await child.status;
    await drained;
  };
  const it = lines(child.stdout);
  const first = await it.next();
  const startupMs = performance.now() - t0;
  // Keep reading so the pipe never fills.
  const drained = (async () => {
    for await (const _ of it) { /* discard */ }
  })();
  if (first.value !== "ready") {
    await stop();
    throw new Error(`Baseline "${IDLE} ${args.join(" ")}" did not start`);
  }
  return { pid: child.pid, startupMs, stop };
}

/** Per-thread counts over `seconds` as rates (times `scale`), the non-zero ones, largest first. */
function ratesByThread(
  counts: Record<string, number>,
  seconds: number,
  scale: number,
  digits: number,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(counts)
      .map(([name, n]) => [name, round((n / seconds) * scale, digits)] as const)
      .filter(([, rate]) => rate > 0)
      .sort((x, y) => y[1] - x[1]),
  );
}

/** MiB as the goals' decimal megabytes, to a tenth. */
function mb(mib: number): number {
  return round((mib * MiB) / 1e6, 1);
}

/** The three largest of a per-thread figure, as `main 0.2%, …`. */
export function byThreadText(byThread: Record<string, number>, unit: string): string {
  const top = Object.entries(byThread).sort((x, y) => y[1] - x[1]).slice(0, 3);
  return top.length ? top.map(([name, v]) => `${name} ${fmt(v)}${unit}`).join(", ") : "none";
}

interface Measured {
  name: string;
  label: string;
  rssMiB: number;
  rssAnonMiB: number;
  rssFileMiB: number;
}

/**
 * The stretch goal of the API agent's RSS, 80 MB, judged beside the 100 MB one. A miss says what
 * the RSS is made of: the process's own anonymous pages, and the runtime's file-backed code and
 * data, set against the client's bundle and a bare deno, where the same split applies.
 */
export function rssStretchGoal(agent: Measured, all: Measured[], seconds: number): Goal {
  const of = (name: string) => all.find((x) => x.name === name);
  const split = (m?: Measured) =>
    m ? `${fmt(m.rssAnonMiB)} anonymous + ${fmt(m.rssFileMiB)} file-backed MiB` : "not measured";
  return atMost(
    "footprint",
    `${agent.label}: RSS after ${fmt(seconds)} s idle, stretch`,
    mb(agent.rssMiB),
    80,
    "MB",
    `the agent ${split(agent)}; the client's bundle in a bare deno ${
      split(of("denoLaceClient"))
    }; an empty script ${split(of("bareDeno"))}: the file-backed pages are the runtime's own ` +
      `code and data, shared by every process of the binary`,
  );
}

export async function footprint(
  opts: FootprintOptions,
  cleanups: CleanupStack,
): Promise<FigureResult> {
  const pods = opts.quick ? 50 : 250;
  const subjects: Subject[] = [];

  // Warm the module caches, so startups measure starting, not first-time transpiling.
  await new Deno.Command(mainCommand(["version"])[0], {
    args: mainCommand(["version"]).slice(1),
    stdout: "null",
    stderr: "null",
  }).output();
  await (await startBaseline(["client-node"])).stop();

  // The baselines, each a `deno run` of bench/idle.ts with its argument.
  for (
    const [name, label, args] of [
      ["bareDeno", "deno run, empty script", []],
      ["denoTick", "deno run, 1 Hz empty timer", ["tick"]],
      ["denoClientNode", "deno run, import client-node only", ["client-node"]],
      [
        "denoKubeConfigModule",
        "deno run, import client-node's KubeConfig module only",
        ["kubeconfig-module"],
      ],
      ["denoWatchModule", "deno run, import client-node's Watch module only", ["watch-module"]],
      [
        "denoLaceClient",
        "deno run, import the client as the agent does (its bundle)",
        ["lace-client"],
      ],
    ] as const
  ) {
    const baseline = await startBaseline([...args]);
    cleanups.push(() => baseline.stop());
    subjects.push({ name, label, ...baseline });
  }

  const cgroups = SimCgroups.create();
  cleanups.push(() => cgroups.dispose());

  // Agent with the directory source.
  const podsDir = await benchPodsDir(cleanups, pods);
  const dirPin = benchPinPath();
  cleanups.push(() => uninstall(dirPin));
  const dirAgent = AgentProcess.start({ pinPath: dirPin, kubeletCgroup: cgroups.kubelet, podsDir });
  cleanups.push(() => dirAgent.stop());
  subjects.push({
    name: "agentDir",
    label: `lace agent, pods directory, ${pods} pods`,
    pid: dirAgent.pid,
    startupMs: await dirAgent.waitReady(),
  });

  // Agent with the Kubernetes API source.
  const api = await startApiServerProcess(cleanups);
  await api.request({ put: Array.from({ length: pods }, (_, i) => benchPod(i)) });
  const apiPin = benchPinPath();
  cleanups.push(() => uninstall(apiPin));
  const apiAgent = AgentProcess.start({
    pinPath: apiPin,
    kubeletCgroup: cgroups.other,
    kubeconfig: String(api.ready.kubeconfig),
  });
  cleanups.push(() => apiAgent.stop());
  subjects.push({
    name: "agentApi",
    label: `lace agent, Kubernetes API, ${pods} pods`,
    pid: apiAgent.pid,
    startupMs: await apiAgent.waitReady(),
  });
  const targets = JSON.parse((await getFromAgent(apiAgent.agentSocket, "/targets", 5000)).body)
    .length;
  const expectedTargets = pods * benchPodKeys(0).length;
  if (targets !== expectedTargets) {
    throw new Error(`The API agent reports ${targets} targets, expected ${expectedTargets}`);
  }

  // A short settle so the idle window starts after start-up work (first GC, timers) is done.
  await sleep(2000);
  const before = new Map<string, ProcSample>(subjects.map((s) => [s.name, sampleProcess(s.pid)]));
  const t0 = performance.now();
  await sleep(opts.idleSeconds * 1000);
  const seconds = (performance.now() - t0) / 1000;
  const after = new Map<string, ProcSample>(subjects.map((s) => [s.name, sampleProcess(s.pid)]));

  const measured = subjects.map((s) => {
    const a = before.get(s.name)!, b = after.get(s.name)!;
    const byThread = switchesBetween(a, b);
    return {
      name: s.name,
      label: s.label,
      startupMs: round(s.startupMs, 1),
      rssMiB: round(b.rssBytes / MiB, 1),
      rssAnonMiB: round(b.rssAnonBytes / MiB, 1),
      rssFileMiB: round(b.rssFileBytes / MiB, 1),
      peakRssMiB: round(b.peakRssBytes / MiB, 1),
      idleCpuPercent: round(((b.cpuSeconds - a.cpuSeconds) / seconds) * 100, 3),
      wakeupsPerSecond: round(
        Object.values(byThread).reduce((x, y) => x + y, 0) / seconds,
        2,
      ),
      mainThreadSwitchesPerSecond: round(
        (b.mainThreadSwitches - a.mainThreadSwitches) / seconds,
        2,
      ),
      mainThreadWakeupsPerSecond: round((b.mainThreadWakeups - a.mainThreadWakeups) / seconds, 2),
      wakeupsPerSecondByThread: ratesByThread(byThread, seconds, 1, 2),
      idleCpuPercentByThread: ratesByThread(cpuBetween(a, b), seconds, 100, 3),
      threads: b.threads,
    };
  });
  const rows: Row[] = measured.map((m) => ({
    measurement: m.label,
    value: `ready ${fmt(m.startupMs)} ms, RSS ${fmt(m.rssMiB)} MiB (peak ${fmt(m.peakRssMiB)}; ` +
      `${fmt(m.rssAnonMiB)} anonymous, ${fmt(m.rssFileMiB)} file-backed), ` +
      `idle CPU ${fmt(m.idleCpuPercent)}%, wake-ups/s ${fmt(m.mainThreadWakeupsPerSecond)} ` +
      `main thread (${fmt(m.mainThreadSwitchesPerSecond)} with preemptions), ` +
      `${fmt(m.wakeupsPerSecond)} switches/s all threads; idle CPU by thread: ${
        byThreadText(m.idleCpuPercentByThread, "%")
      }`,
    goal: m.name.startsWith("agent") ? "RSS ≤ 100 MB, idle CPU ≈ 0" : undefined,
  }));
  // What an agent on the client costs before it holds anything for the API: the client as the
  // agent loads it, in a bare deno, plus what the agent costs beyond a bare deno without the
  // client (the pods-directory agent). Both load some of the same node modules, so this is a
  // little more than their union.
  const rssOf = (name: string) => measured.find((x) => x.name === name)?.rssMiB ?? NaN;
  const sumMiB = round(rssOf("denoLaceClient") + rssOf("agentDir") - rssOf("bareDeno"), 1);
  rows.push({
    measurement: "the client's bundle + the agent's own share (pods-directory agent − empty)",
    value: `${fmt(rssOf("denoLaceClient"))} + (${fmt(rssOf("agentDir"))} − ${
      fmt(rssOf("bareDeno"))
    }) = ${fmt(sumMiB)} MiB = ${fmt(mb(sumMiB))} MB`,
  });
  rows.push({ measurement: "idle window", value: `${fmt(seconds)} s, after all were ready` });
  rows.push({ measurement: "V8 flags of every process", value: V8_FLAGS.join(" ") });
  const tickRow = measured.find((m) => m.name === "denoTick")!;
  const goals: Goal[] = [];
  for (const m of measured.filter((x) => x.name.startsWith("agent"))) {
    // 100 MB as in the goal: decimal megabytes.
    goals.push(atMost(
      "footprint",
      `${m.label}: RSS after ${fmt(seconds)} s idle`,
      mb(m.rssMiB),
      100,
      "MB",
      m.name === "agentApi"
        ? `the Kubernetes client alone costs ${
          fmt(measured.find((x) => x.name === "denoClientNode")!.rssMiB)
        } MiB RSS in a bare deno, its KubeConfig module alone ${
          fmt(rssOf("denoKubeConfigModule"))
        } MiB, the agent's bundle of it ${
          fmt(rssOf("denoLaceClient"))
        } MiB, and with the agent's own share (pods-directory agent − empty script) ${
          fmt(mb(sumMiB))
        } MB before anything for the API (see their rows)`
        : undefined,
    ));
    if (m.name === "agentApi") goals.push(rssStretchGoal(m, measured, seconds));
    // A loop that wakes once a second is allowed: compare with deno running just such a timer
    // (one timer costs the event loop more than one context switch).
    const extra = round(m.mainThreadWakeupsPerSecond - tickRow.mainThreadWakeupsPerSecond, 2);
    const met = m.idleCpuPercent <= 0.5 && extra <= 1;
    const busiest = `wake-ups by thread: ${byThreadText(m.wakeupsPerSecondByThread, "/s")}; ` +
      `CPU by thread: ${byThreadText(m.idleCpuPercentByThread, "%")}`;
    goals.push({
      figure: "footprint",
      name: `${m.label}: idle CPU`,
      target: "≈ 0: ≤ 0.5% of a core, main thread wakes ≤ 1/s more than a 1 Hz timer",
      measured: `${fmt(m.idleCpuPercent)}%, main thread ${
        fmt(extra)
      } wake-ups/s more than a 1 Hz timer`,
      met,
      ...(met ? {} : { reason: busiest }),
    });
  }
  return {
    name: "footprint",
    title: "4. Agent footprint",
    rows,
    goals,
    data: {
      pods,
      probesPerPod: 3,
      idleSeconds: round(seconds, 2),
      v8Flags: V8_FLAGS,
      processes: measured,
    },
  };
}
