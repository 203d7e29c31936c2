/**
 * Figure 7, the agent's local view with a full map: `lace agent` with 65,532
 * targets (10,922 dual-stack pods with three probes each, the map holds
 * 65,536), then GET /targets on its local socket (curl, another process)
 * while this process probes /healthz as the kubelet does (the loopback health
 * listener, a new connection per probe) every millisecond. Judged on the p99
 * of those answers during the transfers against the p99 idle: what
 * a transfer costs the probes, not a difference of two maxima floored at 0.
 */
import { join } from "node:path";
import { uninstall } from "../lib/datapath/pins.ts";
import { SimCgroups } from "../lib/demo/cgroup.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";
import { AgentProcess } from "./agent_process.ts";
import { benchPodsDir } from "./pods.ts";
import { probeOnce } from "../tests/helpers/http_flood.ts";
import { type FigureResult, fmt, type Goal, type Row } from "./report.ts";
import { median, percentile, round } from "./stats.ts";
import { benchPinPath, sleep } from "./system.ts";

export interface TargetsViewOptions {
  quick: boolean;
}

/** Kubelet-style probes of /healthz at `addr`, 1 ms apart, until `until` settles: latencies (ms) and failures. */
async function healthzLatencies(
  addr: string,
  until: Promise<unknown>,
): Promise<{ ms: number[]; failed: number }> {
  let done = false;
  until.finally(() => done = true);
  const ms: number[] = [];
  let failed = 0;
  while (!done) {
    const t0 = performance.now();
    const status = await probeOnce(addr, "/healthz", 2000).catch(() => 0);
    ms.push(performance.now() - t0);
    if (status !== 200) failed++;
    await sleep(1);
  }
  return { ms, failed };
}

export async function targetsView(
  opts: TargetsViewOptions,
  cleanups: CleanupStack,
): Promise<FigureResult> {
  const pods = opts.quick ? 1000 : 10_922;
  const perPod = 6;
  const cgroups = SimCgroups.create();
  cleanups.push(() => cgroups.dispose());
  const podsDir = await benchPodsDir(cleanups, pods, { dualStack: true });
  const pin = benchPinPath();
  cleanups.push(() => uninstall(pin));
  const agent = AgentProcess.start({ pinPath: pin, kubeletCgroup: cgroups.kubelet, podsDir });
  cleanups.push(() => agent.stop());
  await agent.waitReady(300_000);
  // Let start-up's collections of the large heap finish before the idle baseline.
  await sleep(8000);

  const curl = (out: string) =>
    new Deno.Command("curl", {
      args: [
        "-sS",
        "--unix-socket",
        agent.agentSocket,
        "-o",
        out,
        "-w",
        "%{time_total}",
        "http://localhost/targets",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
  const idle = await healthzLatencies(agent.healthAddr, sleep(3000));
  // Not in the pods directory: the agent watches it, and each write of the answer's file there
  // would make it re-read the directory while the transfer is being timed.
  const outDir = await Deno.makeTempDir({ prefix: "lace-bench-targets-" });
  cleanups.push(() => Deno.remove(outDir, { recursive: true }));
  const body = join(outDir, "targets.json");
  const transfers: number[] = [];
  const during: number[] = [];
  let failed = idle.failed;
  for (let run = 0; run < (opts.quick ? 2 : 5); run++) {
    const request = curl(body);
    const got = await healthzLatencies(agent.healthAddr, request);
    during.push(...got.ms);
    failed += got.failed;
    const res = await request;
    if (!res.success) {
      throw new Error(`GET /targets failed: ${new TextDecoder().decode(res.stderr)}`);
    }
    transfers.push(Number(new TextDecoder().decode(res.stdout)) * 1000);
  }
  const targets = JSON.parse(Deno.readTextFileSync(body)).length;
  const bytes = Deno.statSync(body).size;
  if (targets !== pods * perPod) {
    throw new Error(`/targets listed ${targets} targets, expected ${pods * perPod}`);
  }
  const idleMax = Math.max(...idle.ms), duringMax = Math.max(...during);
  const p99Idle = percentile(idle.ms, 99), p99During = percentile(during, 99);
  const ratio = round(p99During / p99Idle, 2);
  const met = ratio <= 2 && failed === 0;
  const rows: Row[] = [
    {
      measurement: `GET /targets, ${targets} targets (${
        round(bytes / 2 ** 20, 1)
      } MiB), median of ${transfers.length}`,
      value: `${fmt(round(median(transfers), 1))} ms`,
    },
    {
      measurement: "health (loopback) /healthz every ms, p99 idle / during /targets",
      value: `${fmt(round(p99Idle, 2))} / ${fmt(round(p99During, 2))} ms (median ${
        fmt(round(median(idle.ms), 2))
      } / ${fmt(round(median(during), 2))}, longest ${fmt(round(idleMax, 1))} / ${
        fmt(round(duringMax, 1))
      }; ${idle.ms.length} / ${during.length} answers, ${failed} failed)`,
    },
    {
      measurement: "p99 during /targets ÷ p99 idle",
      value: `${fmt(ratio)}×`,
      goal: "≤ 2×, none failed",
    },
  ];
  const goal: Goal = {
    figure: "targets",
    name: `/targets with ${targets} targets: health p99 during the transfer against idle`,
    target: "≤ 2×, none failed",
    measured: `${fmt(ratio)}× (${fmt(round(p99During, 2))} vs ${
      fmt(round(p99Idle, 2))
    } ms), ${failed} failed`,
    met,
    ...(met ? {} : { reason: "the transfers slowed the health answers' tail, or some failed" }),
  };
  return {
    name: "targets",
    title: "7. Local view",
    rows,
    goals: [goal],
    data: {
      targets,
      bytes,
      transferMs: transfers.map((x) => round(x, 1)),
      healthzIdleP99Ms: round(p99Idle, 2),
      healthzDuringP99Ms: round(p99During, 2),
      healthzIdleMaxMs: round(idleMax, 2),
      healthzDuringMaxMs: round(duringMax, 2),
      healthzP99Ratio: ratio,
      healthzFailed: failed,
    },
  };
}
