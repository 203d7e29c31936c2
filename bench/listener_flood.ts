/**
 * Figure 8, health under a flood from pods (docs/threat-model.md, "A pod"): an agent
 * with 100 pods, probed as the kubelet probes it (a new connection per probe,
 * `Connection: close`) on its loopback health listener, first idle, then while
 * another process floods its node listener as tests/listener_flood_test.ts does: 64
 * keep-alive connections from 64 source addresses, each sending a request
 * every 0.5 s and reconnecting when closed, and a 16 KiB head sent one byte per
 * write, over and over. The p99 of the health answers during the flood against
 * idle, side by side; also /healthz on the node listener itself during the
 * flood (the listener every pod reaches), the agent's CPU and what the
 * attacker saw.
 */
import { uninstall } from "../lib/datapath/pins.ts";
import { SimCgroups } from "../lib/demo/cgroup.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";
import { lines } from "../lib/os/process.ts";
import { probeOnce } from "../tests/helpers/http_flood.ts";
import { AgentProcess } from "./agent_process.ts";
import { benchPodsDir } from "./pods.ts";
import { type FigureResult, fmt, type Goal, type Row } from "./report.ts";
import { median, percentile, round } from "./stats.ts";
import { benchPinPath, sampleProcess, sleep } from "./system.ts";

export interface ListenerFloodOptions {
  quick: boolean;
}

/**
 * `n` rounds of kubelet-style probes of `path`, one at each of `addrs` per round (which first
 * alternating), `gapMs` apart: each address's latencies (ms) and failures, in the same order.
 */
async function probeInTurn(addrs: string[], path: string, n: number, gapMs = 5) {
  const sides = addrs.map((a) => ({ a, ms: [] as number[], failed: 0 }));
  for (let i = 0; i < n; i++) {
    for (const side of i % 2 ? [...sides].reverse() : sides) {
      const t0 = performance.now();
      const status = await probeOnce(side.a, path, 2000).catch(() => 0);
      side.ms.push(performance.now() - t0);
      if (status !== 200) side.failed++;
    }
    await sleep(gapMs);
  }
  return sides.map(({ ms, failed }) => ({ ms, failed }));
}

/** `deno run -A` of a script beside this one, its stdout piped, killed by the run's cleanup. */
function spawnChild(script: string, args: string[], cleanups: CleanupStack): Deno.ChildProcess {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(script, import.meta.url).pathname, ...args],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  cleanups.push(async () => {
    try {
      child.kill("SIGKILL");
    } catch { /* exited */ }
    await child.status;
  });
  return child;
}

/** The control's health server in a process of its own; see bench/health_control.ts. */
async function startControl(cleanups: CleanupStack): Promise<string> {
  const first = await lines(spawnChild("./health_control.ts", [], cleanups).stdout).next();
  if (first.done) throw new Error("The health control exited before it printed its address");
  return JSON.parse(first.value).addr;
}

export async function listenerFlood(
  opts: ListenerFloodOptions,
  cleanups: CleanupStack,
): Promise<FigureResult> {
  const probes = opts.quick ? 100 : 500;
  const cgroups = SimCgroups.create();
  cleanups.push(() => cgroups.dispose());
  const podsDir = await benchPodsDir(cleanups, 100);
  const pin = benchPinPath();
  cleanups.push(() => uninstall(pin));
  const agent = AgentProcess.start({ pinPath: pin, kubeletCgroup: cgroups.kubelet, podsDir });
  const healthAddr = agent.healthAddr;
  cleanups.push(() => agent.stop());
  await agent.waitReady(120_000);
  await sleep(2000);

  const controlAddr = await startControl(cleanups);
  const [idle, controlIdle] = await probeInTurn([healthAddr, controlAddr], "/healthz", probes);

  const [host, port] = agent.metricsAddr.split(":");
  const child = spawnChild("./flood_child.ts", [host, port], cleanups);
  let last: Record<string, unknown> = {};
  const readLines = (async () => {
    for await (const line of lines(child.stdout)) if (line) last = JSON.parse(line);
  })();
  const deadline = performance.now() + 30_000;
  while (Number(last.answered ?? 0) < 128) {
    if (performance.now() > deadline) throw new Error("The flood got no answers within 30 s");
    await sleep(50);
  }
  const cpuBefore = sampleProcess(agent.pid).cpuSeconds, t0 = performance.now();
  const [during, controlDuring] = await probeInTurn([healthAddr, controlAddr], "/healthz", probes);
  // Ten a second: one address's rate on the node listener.
  const [nodeListener] = await probeInTurn(
    [agent.metricsAddr],
    "/healthz",
    opts.quick ? 20 : 50,
    100,
  );
  const cpu = (sampleProcess(agent.pid).cpuSeconds - cpuBefore) / ((performance.now() - t0) / 1000);
  child.kill("SIGTERM");
  await child.status;
  await readLines;
  const attacker = last as {
    answered: number;
    responses: Record<string, number>;
    closed: number;
    dribbled: number;
  };

  const p99Idle = percentile(idle.ms, 99), p99During = percentile(during.ms, 99);
  const ratio = round(p99During / p99Idle, 2);
  const controlP99Idle = percentile(controlIdle.ms, 99);
  const controlP99During = percentile(controlDuring.ms, 99);
  const controlRatio = round(controlP99During / controlP99Idle, 2);
  const rows: Row[] = [
    {
      measurement:
        `health (loopback) /healthz p99, idle / during the flood (${probes} probes each)`,
      value: `${fmt(round(p99Idle, 2))} / ${fmt(round(p99During, 2))} ms (median ${
        fmt(round(median(idle.ms), 2))
      } / ${fmt(round(median(during.ms), 2))} ms; failed ${idle.failed} / ${during.failed})`,
    },
    { measurement: "p99 during the flood ÷ p99 idle", value: `${fmt(ratio)}×`, goal: "≤ 2×" },
    {
      measurement: "control: the same health server alone in another process, probed in turn " +
        "with the agent, p99 idle / during the flood",
      value: `${fmt(round(controlP99Idle, 2))} / ${fmt(round(controlP99During, 2))} ms (${
        fmt(controlRatio)
      }×: what the machine adds, not the agent; failed ${controlIdle.failed} / ${controlDuring.failed})`,
    },
    {
      measurement: "/healthz on the node listener during the flood, from another address, 10/s",
      value: `p99 ${
        fmt(round(percentile(nodeListener.ms, 99), 2))
      } ms, failed ${nodeListener.failed} of ${nodeListener.ms.length}`,
    },
    {
      measurement: "agent CPU during the flood",
      value: `${fmt(round(cpu * 100, 1))} % of one core`,
    },
    {
      measurement: "attacker: responses by status, connections closed by the agent, " +
        "16 KiB byte-at-a-time heads answered",
      value: `${
        JSON.stringify(attacker.responses)
      }, ${attacker.closed} closed, ${attacker.dribbled} heads`,
    },
  ];
  const goals: Goal[] = [{
    figure: "flood",
    name: "health p99 during a flood from pods, against idle",
    target: "≤ 2×",
    measured: `${fmt(ratio)}×`,
    met: ratio <= 2 && during.failed === 0,
    ...(ratio <= 2 && during.failed === 0 ? {} : {
      reason: during.failed
        ? `${during.failed} health probes failed during the flood`
        : `measured above the goal; the control alone measured ${fmt(controlRatio)}×`,
    }),
  }];
  return {
    name: "flood",
    title: "8. Health under a flood",
    rows,
    goals,
    data: {
      probes,
      healthIdleMs: { p50: round(median(idle.ms), 3), p99: round(p99Idle, 3) },
      healthDuringMs: { p50: round(median(during.ms), 3), p99: round(p99During, 3) },
      ratio,
      control: {
        idleMs: { p50: round(median(controlIdle.ms), 3), p99: round(controlP99Idle, 3) },
        duringMs: { p50: round(median(controlDuring.ms), 3), p99: round(controlP99During, 3) },
        ratio: controlRatio,
        failedIdle: controlIdle.failed,
        failedDuring: controlDuring.failed,
      },
      failedIdle: idle.failed,
      failedDuring: during.failed,
      nodeListenerDuring: {
        p99: round(percentile(nodeListener.ms, 99), 3),
        failed: nodeListener.failed,
      },
      agentCpuFraction: round(cpu, 3),
      attacker,
    },
  };
}
