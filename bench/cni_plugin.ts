/**
 * Figure 6, the chained CNI plugin: the wall time of one ADD (`lace` run by
 * the runtime with CNI_COMMAND=ADD, the pod's prevResult on stdin, the agent
 * answering on its socket) beside an empty `deno run` script, run in
 * alternation so both see the same machine. The ratio of their p99s is the
 * plugin's own start-up and import graph; the agent's side is an in-process
 * stand-in that answers at once.
 */
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { startCniServer } from "../lib/cni/server.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";
import { v8FlagsArg } from "../lib/os/v8_flags.ts";
import { execPlugin } from "../tests/helpers/cni_runtime.ts";
import { mainCommand } from "./agent_process.ts";
import { atMost, type FigureResult, fmt, type Row } from "./report.ts";
import { median, percentile, round } from "./stats.ts";

export interface CniPluginOptions {
  quick: boolean;
}

const EMPTY = fileURLToPath(new URL("./empty.ts", import.meta.url));

/** Runs a command with `env` and `stdin`; returns its wall time in ms, or throws on failure. */
async function timed(cmd: string[], env: Record<string, string>, stdin: string): Promise<number> {
  const run = await execPlugin(cmd, env, stdin);
  if (run.code !== 0) {
    throw new Error(`"${cmd.join(" ")}" exited ${run.code}: ${run.stderr.trim()}`);
  }
  return run.ms;
}

export async function cniPluginFigure(
  opts: CniPluginOptions,
  cleanups: CleanupStack,
): Promise<FigureResult> {
  const runs = opts.quick ? 10 : 100;
  const dir = await Deno.makeTempDir({ prefix: "lace-bench-cni-" });
  cleanups.push(() => Deno.remove(dir, { recursive: true }));
  const socket = join(dir, "cni.sock");
  let registered = 0;
  const server = await startCniServer(socket, {
    registerAttachment: () => {
      registered++;
      return Promise.resolve();
    },
    removeAttachment: () => {},
  });
  cleanups.push(() => server.close());

  const conf = JSON.stringify({
    cniVersion: "1.0.0",
    name: "pods",
    type: "lace",
    socket,
    prevResult: {
      cniVersion: "1.0.0",
      interfaces: [{ name: "eth0", sandbox: "/var/run/netns/bench" }],
      ips: [{ address: "10.1.0.5/24", interface: 0 }],
    },
  });
  const env = (i: number) => ({
    CNI_COMMAND: "ADD",
    CNI_CONTAINERID: `bench-${i}`,
    CNI_NETNS: "/var/run/netns/bench",
    CNI_IFNAME: "eth0",
    CNI_ARGS: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=bench-${i};K8S_POD_UID=uid-${i}`,
    CNI_PATH: "/opt/cni/bin",
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
  });
  const plugin = mainCommand([]);
  plugin.splice(3, 0, "--quiet");
  const empty = [Deno.execPath(), "run", "--allow-all", "--quiet", v8FlagsArg(), EMPTY];

  // Warm the module caches: first runs measure transpiling, not starting.
  await timed(plugin, env(-1), conf);
  await timed(empty, {}, "");
  const addMs: number[] = [], emptyMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    // Alternate which goes first, so neither always follows the other.
    if (i % 2 === 0) {
      addMs.push(await timed(plugin, env(i), conf));
      emptyMs.push(await timed(empty, {}, ""));
    } else {
      emptyMs.push(await timed(empty, {}, ""));
      addMs.push(await timed(plugin, env(i), conf));
    }
  }
  if (registered !== runs + 1) {
    throw new Error(`The stand-in agent saw ${registered} ADDs, expected ${runs + 1}`);
  }
  const stats = (xs: number[]) => ({
    p50: round(median(xs), 1),
    p99: round(percentile(xs, 99), 1),
    max: round(Math.max(...xs), 1),
  });
  const add = stats(addMs), base = stats(emptyMs);
  const ratio = round(add.p99 / base.p99, 3);
  const rows: Row[] = [
    {
      measurement: `one ADD under deno run (agent answering), p50 / p99 / max of ${runs}`,
      value: `${fmt(add.p50)} / ${fmt(add.p99)} / ${fmt(add.max)} ms`,
    },
    {
      measurement: `empty deno run script, p50 / p99 / max of ${runs}, alternating`,
      value: `${fmt(base.p50)} / ${fmt(base.p99)} / ${fmt(base.max)} ms`,
    },
    {
      measurement: "ADD / empty script, p99 (p50)",
      value: `${fmt(ratio)}× (${fmt(round(add.p50 / base.p50, 3))}×)`,
      goal: "p99 ≤ 1.5×",
    },
  ];
  return {
    name: "cni",
    title: "6. CNI plugin",
    rows,
    goals: [atMost("cni", "one ADD vs an empty deno run script: p99 ratio", ratio, 1.5, "×")],
    data: {
      runs,
      add: { ...add, samples: addMs.map((x) => round(x, 2)) },
      empty: { ...base, samples: emptyMs.map((x) => round(x, 2)) },
    },
  };
}
