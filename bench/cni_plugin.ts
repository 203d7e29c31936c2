/**
 * Figure 6, the chained CNI plugin: the wall time of one ADD (`lace` run by
 * the runtime with CNI_COMMAND=ADD, the pod's prevResult on stdin, the agent
 * answering on its socket) beside an empty `deno run` script, run in
 * alternation so both see the same machine. The ratio of their p99s is the
 * plugin's own start-up and import graph; the agent's side is an in-process
 * stand-in that answers at once. Then the same ADD with the agent down, which
 * removes the stale entries at the pod's address from a pinned probe map
 * (datapath/address_purge.ts) of 10,000 and of 65,536 entries, the pod's
 * entries put back before each run.
 */
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { startCniServer } from "../lib/cni/server.ts";
import type { CleanupStack } from "../lib/os/cleanup_stack.ts";
import { v8FlagsArg } from "../lib/os/v8_flags.ts";
import { defaultConfig } from "../lib/config.ts";
import { Datapath } from "../lib/datapath/loader.ts";
import { uninstall } from "../lib/datapath/pins.ts";
import { markFor, MAX_TARGETS, type ProbeEntry } from "../lib/probe/key.ts";
import { testPinPath } from "../tests/helpers/sim_world.ts";
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
  const down = await agentDownRuns(
    plugin,
    env,
    conf,
    join(dir, "no-agent.sock"),
    opts.quick ? 5 : 40,
    cleanups,
  );
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
    ...down.map((d) => ({
      measurement: `one ADD with the agent down, purging a pinned map of ${
        d.entries.toLocaleString("en")
      } entries (2 removed), p50 / p99 / max of ${d.runs}`,
      value: `${fmt(d.p50)} / ${fmt(d.p99)} / ${fmt(d.max)} ms`,
    })),
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
      agentDown: down,
    },
  };
}

/**
 * ADDs with no agent behind the socket and a pinned probe map of each size: each run finds the
 * pod's two entries (put back before it) among the others and removes them. Returns the wall
 * time stats per map size.
 */
async function agentDownRuns(
  plugin: string[],
  env: (i: number) => Record<string, string>,
  agentConf: string,
  socket: string,
  runs: number,
  cleanups: CleanupStack,
) {
  const pinPath = testPinPath();
  cleanups.push(() => uninstall(pinPath));
  const datapath = Datapath.open({ pinPath });
  cleanups.push(() => datapath.close());
  const conf = JSON.stringify({ ...JSON.parse(agentConf), socket, pinPath });
  const entry = (a: number, b: number, port: number, networkId: number): ProbeEntry => ({
    key: { family: "ipv4", address: `10.${a}.${b}.${port % 200}`, port },
    value: { networkId, mark: markFor(defaultConfig(), networkId) },
  });
  // The pod's address (the figure's prevResult) with a stale entry of another network on two ports.
  const stale = [8080, 9000].map((port) => ({
    key: { family: "ipv4" as const, address: "10.1.0.5", port },
    value: { networkId: 2, mark: markFor(defaultConfig(), 2) },
  }));
  const out = [];
  let filled = 0;
  for (const entries of [10_000, MAX_TARGETS]) {
    for (; filled < entries - stale.length; filled++) {
      datapath.store.put(entry(100 + (filled >> 16), (filled >> 8) & 0xff, 1 + filled, 1));
    }
    const ms: number[] = [];
    for (let i = 0; i < runs + 1; i++) {
      for (const e of stale) datapath.store.put(e);
      const run = await execPlugin(plugin, env(10_000 + i), conf);
      if (
        run.code !== 0 ||
        !/removed the probe targets 10\.1\.0\.5:8080, 10\.1\.0\.5:9000 /.test(run.stderr)
      ) {
        throw new Error(`The ADD with the agent down did not purge: ${run.code} ${run.stderr}`);
      }
      if (i > 0) ms.push(run.ms); // the first run compiles the purge's modules
    }
    out.push({
      entries,
      runs,
      p50: round(median(ms), 1),
      p99: round(percentile(ms, 99), 1),
      max: round(Math.max(...ms), 1),
      samples: ms.map((x) => round(x, 2)),
    });
  }
  return out;
}
