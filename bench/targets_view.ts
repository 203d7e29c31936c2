/**
 * Figure 7, the agent's local view with a full map: `lace agent` with 65,532
 * targets (10,922 dual-stack pods with three probes each, the map holds
 * 65,536), then GET /targets on its local socket (curl, another process)
 * while this process asks /healthz on the same socket every millisecond.
 * The longest /healthz answer during the transfer, less the longest before
 * it, is how long the agent's event loop was blocked at a stretch.
 */
import { join } from "node:path";
import { uninstall } from "../lib/datapath/pins.ts";
import { SimCgroups } from "../lib/demo/cgroup.ts";
import type { CleanupStack } from "../lib/cleanup_stack.ts";
import { AgentProcess } from "./agent_process.ts";
import { benchPod } from "./pods.ts";
import { atMost, type FigureResult, fmt, type Row } from "./report.ts";
import { median, round } from "./stats.ts";
import { benchPinPath, sleep } from "./system.ts";

export interface TargetsViewOptions {
  quick: boolean;
}

/** Times GET /healthz on the agent's socket until `until` resolves; returns every latency, ms. */
async function healthzLatencies(socket: string, until: Promise<unknown>): Promise<number[]> {
  let done = false;
  until.finally(() => done = true);
  const out: number[] = [];
  using client = Deno.createHttpClient({ proxy: { transport: "unix", path: socket } });
  while (!done) {
    const t0 = performance.now();
    const res = await fetch("http://localhost/healthz", { client });
    await res.text();
    out.push(performance.now() - t0);
    await sleep(1);
  }
  return out;
}

export async function targetsView(
  opts: TargetsViewOptions,
  cleanups: CleanupStack,
): Promise<FigureResult> {
  const pods = opts.quick ? 1000 : 10_922;
  const perPod = 6;
  const cgroups = SimCgroups.create();
  cleanups.push(() => cgroups.dispose());
  const podsDir = await Deno.makeTempDir({ prefix: "lace-bench-pods-" });
  cleanups.push(() => Deno.remove(podsDir, { recursive: true }));
  for (let i = 0; i < pods; i++) {
    Deno.writeTextFileSync(
      join(podsDir, `pod-${i}.json`),
      JSON.stringify(benchPod(i, { dualStack: true })),
    );
  }
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
  const idle = await healthzLatencies(agent.agentSocket, sleep(3000));
  // Not in the pods directory: the agent watches it, and each write of a 14 MiB file there made
  // it re-read the directory while the transfer was being timed.
  const outDir = await Deno.makeTempDir({ prefix: "lace-bench-targets-" });
  cleanups.push(() => Deno.remove(outDir, { recursive: true }));
  const body = join(outDir, "targets.json");
  const transfers: number[] = [];
  const during: number[] = [];
  for (let run = 0; run < (opts.quick ? 2 : 5); run++) {
    const request = curl(body);
    during.push(...await healthzLatencies(agent.agentSocket, request));
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
  const idleMax = Math.max(...idle), duringMax = Math.max(...during);
  const blocked = round(Math.max(0, duringMax - idleMax), 1);
  const rows: Row[] = [
    {
      measurement: `GET /targets, ${targets} targets (${
        round(bytes / 2 ** 20, 1)
      } MiB), median of ${transfers.length}`,
      value: `${fmt(round(median(transfers), 1))} ms`,
    },
    {
      measurement: "/healthz on the same socket every ms: longest answer idle / during /targets",
      value: `${fmt(round(idleMax, 1))} / ${fmt(round(duringMax, 1))} ms (median ${
        fmt(round(median(idle), 2))
      } / ${fmt(round(median(during), 2))} ms, ${during.length} answers during)`,
    },
    {
      measurement: "event loop blocked at a stretch (longest during − longest idle)",
      value: `${fmt(blocked)} ms`,
      goal: "≤ 10 ms",
    },
  ];
  return {
    name: "targets",
    title: "7. Local view",
    rows,
    goals: [
      atMost("targets", `/targets with ${targets} targets: event loop blocked`, blocked, 10, "ms"),
    ],
    data: {
      targets,
      bytes,
      transferMs: transfers.map((x) => round(x, 1)),
      healthzIdleMaxMs: round(idleMax, 2),
      healthzDuringMaxMs: round(duringMax, 2),
      blockedMs: blocked,
    },
  };
}
