/**
 * `deno task bench`: what Lace costs the node, measured side by side in one
 * run on the netns harness (root). Prints one table and, with --json FILE,
 * writes one JSON document. Every figure sets up and removes its own
 * namespaces, cgroups, pins, processes and sysctls, also on failure and on
 * Ctrl-C.
 *
 *   deno run -A bench/main.ts [--quick] [--only hook,reachable,reconcile,footprint,netcheck,cni,targets,flood,pods]
 *                             [--json FILE] [--idle-seconds N]
 *   deno run -A bench/main.ts --only probes [--probe-pods 50,110] [--probe-hold SECONDS]
 *
 * The probes figure runs only when named: it starts a real node (the real kubelet, containerd,
 * runc), for which scripts/setup.sh builds the tools.
 */
import { fileURLToPath } from "node:url";
import { setupLogging } from "../lib/log/setup.ts";
import { cniPluginFigure } from "./cni_plugin.ts";
import { footprint } from "./footprint.ts";
import { hookCost } from "./hook_cost.ts";
import { listenerFlood } from "./listener_flood.ts";
import { podMemory } from "./pod_memory.ts";
import { probesFigure } from "./probes.ts";
import { netcheckScheduling } from "./netcheck_schedule.ts";
import { reconcileScale } from "./reconcile_scale.ts";
import { targetsView } from "./targets_view.ts";
import { timeToReachable } from "./time_to_reachable.ts";
import { type FigureFailure, type FigureResult, formatTable } from "./report.ts";
import { machineInfo, removeBenchPins } from "./system.ts";
import { sweepAbandoned } from "../lib/demo/leftovers.ts";
import { bpfObjectLocation } from "../lib/datapath/bpf_object.ts";
import { errorChain } from "../lib/text/error_chain.ts";
import { CleanupStack } from "../lib/os/cleanup_stack.ts";
import { type Column, COLUMNS } from "./probe_columns.ts";

export interface BenchOptions {
  quick: boolean;
  only: string[];
  json?: string;
  idleSeconds: number;
  /** Pod counts of the probes figure, each run in every column. */
  probePods: number[];
  /** Seconds each column holds its pods Ready while measured. */
  probeHoldSeconds: number;
  /** Rounds of flat and Lace, alternating, at each pod count (judged on their medians). */
  probeRounds: number;
  /** The probes figure's columns run. */
  probeColumns: Column[];
}

/** The line of a failed build's output that says why: its first error, else its last line. */
function failureLine(stderr: Uint8Array): string {
  const lines = new TextDecoder().decode(stderr).trim().split("\n");
  return (lines.find((l) => /\berror\b/i.test(l)) ?? lines.at(-1) ?? "").trim();
}

/**
 * Builds the Kubernetes client's bundle (`deno task bundle`: about 2.5 s, the bundle replaced
 * only when its bytes differ), which the footprint figure measures: a checkout where set-up has
 * not run has none. Throws one line saying what to run when the build fails.
 */
async function buildClientBundle(): Promise<void> {
  console.error("  building the Kubernetes client's bundle (deno task bundle)…");
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", fileURLToPath(new URL("../scripts/bundle.ts", import.meta.url))],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const why = failureLine(out.stderr);
    throw new Error(
      `the Kubernetes client's bundle could not be built (${why}): run \`deno task bundle\` and fix what it says`,
    );
  }
}

/**
 * Builds the BPF object the agent loads (`deno task bpf`, about 2 s) when the checkout has none
 * (`git clone` without set-up): every figure that runs the agent or its datapath needs it. Throws
 * one line saying what to run when it cannot be built, or when LACE_BPF_OBJECT names no file.
 */
async function buildBpfObjectIfMissing(): Promise<void> {
  const where = bpfObjectLocation();
  const path = where instanceof URL ? fileURLToPath(where) : where;
  try {
    await Deno.stat(path);
    return;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  if (!(where instanceof URL)) {
    throw new Error(`LACE_BPF_OBJECT names "${path}", which does not exist: build it, or unset it`);
  }
  console.error("  building the BPF object (deno task bpf)…");
  const script = fileURLToPath(new URL("../scripts/build_bpf.sh", import.meta.url));
  const out = await new Deno.Command("bash", { args: [script], stdout: "piped", stderr: "piped" })
    .output()
    .catch((e: Error) => ({ success: false, stderr: new TextEncoder().encode(e.message) }));
  if (!out.success) {
    const why = failureLine(out.stderr);
    throw new Error(
      `the BPF object bpf/lace.bpf.o could not be built (${why}): run \`deno task bpf\` and fix what it says`,
    );
  }
}

/** `build`, run at most once: later callers share its outcome, a failure too. */
function once(build: () => Promise<void>): () => Promise<void> {
  let outcome: Promise<void> | undefined;
  return () => outcome ??= build();
}

/** What a figure may need built first, and how: each built once per run. */
const BUILDS = { bpf: once(buildBpfObjectIfMissing), bundle: once(buildClientBundle) };

const FIGURES: {
  name: string;
  title: string;
  /** What the figure needs built first; a failure skips the figure with its one-line reason. */
  needs?: (keyof typeof BUILDS)[];
  run: (o: BenchOptions, c: CleanupStack) => Promise<FigureResult>;
  /** Runs only when --only names it (it needs more than the netns harness). */
  optIn?: boolean;
}[] = [
  { name: "hook", title: "1. Hook cost", needs: ["bpf"], run: hookCost },
  {
    name: "reachable",
    title: "2. Time to reachable",
    needs: ["bpf", "bundle"],
    run: timeToReachable,
  },
  { name: "reconcile", title: "3. Reconcile at scale", needs: ["bpf"], run: reconcileScale },
  { name: "footprint", title: "4. Agent footprint", needs: ["bpf", "bundle"], run: footprint },
  { name: "netcheck", title: "5. netcheck scheduling", run: netcheckScheduling },
  { name: "cni", title: "6. CNI plugin", needs: ["bpf"], run: cniPluginFigure },
  { name: "targets", title: "7. Local view", needs: ["bpf"], run: targetsView },
  { name: "flood", title: "8. Health under a flood", needs: ["bpf"], run: listenerFlood },
  { name: "pods", title: "9. Pod memory", needs: ["bundle"], run: podMemory },
  {
    name: "probes",
    title: "10. Probes on the real kubelet",
    needs: ["bpf", "bundle"],
    run: probesFigure,
    optIn: true,
  },
];

const USAGE = `Usage: deno task bench [--quick] [--only NAMES] [--json FILE] [--idle-seconds N]
                       [--probe-pods N,M] [--probe-hold SECONDS] [--probe-rounds N]
                       [--probe-columns flat,lace,exec]

  --quick           small sizes, for a smoke run
  --only NAMES      comma-separated figures: ${FIGURES.map((f) => f.name).join(",")}
                    (probes runs only when named: a real node, the tools of scripts/setup.sh)
  --json FILE       also write the results as JSON
  --idle-seconds N  idle window of the footprint figure (default 60, 5 with --quick)
  --probe-pods N,M  pod counts of the probes figure (default 50,110; 5 with --quick)
  --probe-hold S    seconds each probes column is held Ready and measured (default 120, 15 with --quick)
  --probe-rounds N  flat and Lace columns, alternating, N times at each pod count; the goals are
                    judged on their medians (default 1)
  --probe-columns C the probes figure's columns (default flat,lace,exec)

Runs as root: it builds network namespaces, cgroups and bpffs pins, and removes them.`;

/** Parses the command line; throws a TypeError naming the bad argument. */
export function parseArgs(args: string[]): BenchOptions {
  const opts: BenchOptions = {
    quick: false,
    only: [],
    idleSeconds: NaN,
    probePods: [],
    probeHoldSeconds: NaN,
    probeRounds: 1,
    probeColumns: [],
  };
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    const value = () => {
      const v = inline ?? args[++i];
      if (v === undefined) throw new TypeError(`Flag ${flag} needs a value`);
      return v;
    };
    if (flag === "--quick") opts.quick = true;
    else if (flag === "--only") opts.only.push(...value().split(",").filter(Boolean));
    else if (flag === "--json") opts.json = value();
    else if (flag === "--idle-seconds") opts.idleSeconds = Number(value());
    else if (flag === "--probe-pods") opts.probePods.push(...value().split(",").map(Number));
    else if (flag === "--probe-hold") opts.probeHoldSeconds = Number(value());
    else if (flag === "--probe-rounds") opts.probeRounds = Number(value());
    else if (flag === "--probe-columns") {
      for (const c of value().split(",").filter(Boolean)) {
        if (!(COLUMNS as readonly string[]).includes(c)) {
          throw new TypeError(`Unknown column "${c}" in --probe-columns: choose from ${COLUMNS}`);
        }
        opts.probeColumns.push(c as Column);
      }
    } else throw new TypeError(`Unknown argument "${args[i]}"`);
  }
  for (const name of opts.only) {
    if (!FIGURES.some((f) => f.name === name)) {
      throw new TypeError(
        `Unknown figure "${name}": choose from ${FIGURES.map((f) => f.name).join(", ")}`,
      );
    }
  }
  if (Number.isNaN(opts.idleSeconds)) opts.idleSeconds = opts.quick ? 5 : 60;
  if (!(opts.idleSeconds > 0)) {
    throw new TypeError(`--idle-seconds must be a positive number: "${opts.idleSeconds}"`);
  }
  if (!opts.probePods.length) opts.probePods = opts.quick ? [5] : [50, 110];
  if (!opts.probePods.every((n) => Number.isInteger(n) && n > 0)) {
    throw new TypeError(`--probe-pods takes positive whole numbers: "${opts.probePods}"`);
  }
  if (Number.isNaN(opts.probeHoldSeconds)) opts.probeHoldSeconds = opts.quick ? 15 : 120;
  if (!(opts.probeHoldSeconds > 0)) {
    throw new TypeError(`--probe-hold must be a positive number: "${opts.probeHoldSeconds}"`);
  }
  if (!(Number.isInteger(opts.probeRounds) && opts.probeRounds > 0)) {
    throw new TypeError(`--probe-rounds takes a positive whole number: "${opts.probeRounds}"`);
  }
  if (!opts.probeColumns.length) opts.probeColumns = [...COLUMNS];
  return opts;
}

async function main(args: string[]): Promise<number> {
  if (args.includes("--help") || args.includes("-h")) {
    console.log(USAGE);
    return 0;
  }
  let opts: BenchOptions;
  try {
    opts = parseArgs(args);
  } catch (e) {
    console.error(`${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (Deno.uid() !== 0) {
    console.error("The benchmark needs root (network namespaces, cgroups, BPF): run it with sudo");
    return 2;
  }
  // The agent's parts log every reconcile at info: keep that out of the table.
  setupLogging("warning", "text");
  // What a killed run left (namespaces, cgroups, pins of owners that are gone): its pins would
  // otherwise stay pinned under bpffs for good.
  try {
    for (const what of await sweepAbandoned()) {
      console.error(`Removed ${what}, left by a killed run`);
    }
  } catch (e) {
    console.error((e as Error).message);
  }

  let current: CleanupStack | undefined;
  const interrupted = async () => {
    console.error("\nInterrupted: cleaning up");
    const errors = [...(await current?.runAll() ?? []), ...removeBenchPins()];
    for (const e of errors) console.error("Cleanup after the interrupt failed:", e);
    Deno.exit(130);
  };
  Deno.addSignalListener("SIGINT", interrupted);
  Deno.addSignalListener("SIGTERM", interrupted);

  const started = new Date();
  const results: FigureResult[] = [];
  const failures: FigureFailure[] = [];
  for (const figure of FIGURES) {
    if (opts.only.length ? !opts.only.includes(figure.name) : figure.optIn) continue;
    console.error(`Running ${figure.title}…`);
    const t0 = performance.now();
    const loadBefore = Deno.loadavg()[0];
    current = new CleanupStack(figure.name);
    try {
      try {
        for (const need of figure.needs ?? []) await BUILDS[need]();
      } catch (e) {
        console.error(`${figure.title} skipped: ${(e as Error).message}`);
        failures.push({ name: figure.name, title: figure.title, error: (e as Error).message });
        continue;
      }
      const result = await figure.run(opts, current);
      const loadAfter = Deno.loadavg()[0];
      // The machine may be shared: say how busy it was while this figure ran.
      result.rows.push({
        measurement: "load average (1 min) before / after",
        value: `${loadBefore.toFixed(2)} / ${
          loadAfter.toFixed(2)
        } on ${navigator.hardwareConcurrency} CPUs`,
      });
      result.data.loadAverage = { before: loadBefore, after: loadAfter };
      results.push(result);
    } catch (e) {
      // What failed and why, causes included; a stack trace is for the figure's author.
      console.error(`${figure.title} failed: ${errorChain(e)}`);
      failures.push({
        name: figure.name,
        title: figure.title,
        error: (e as Error)?.message ?? String(e),
      });
    } finally {
      const errors = await current.runAll();
      current = undefined;
      for (const e of errors) console.error(`Cleanup after ${figure.title} failed:`, e);
      if (errors.length) {
        failures.push({
          name: figure.name,
          title: figure.title,
          error: `cleanup failed: ${errors.map(String).join("; ")}`,
        });
      }
    }
    console.error(`  ${figure.title} took ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }

  console.log(formatTable(results, failures));
  if (opts.json) {
    const doc = {
      schema: "lace-bench/1",
      date: started.toISOString(),
      command: ["deno", "run", "--allow-all", "bench/main.ts", ...args].join(" "),
      machine: machineInfo(),
      options: {
        quick: opts.quick,
        only: opts.only,
        idleSeconds: opts.idleSeconds,
        probePods: opts.probePods,
        probeHoldSeconds: opts.probeHoldSeconds,
      },
      figures: Object.fromEntries(results.map((r) => [r.name, r.data])),
      goals: results.flatMap((r) => r.goals),
      failures,
    };
    await Deno.writeTextFile(opts.json, JSON.stringify(doc, null, 2) + "\n");
    console.error(`Wrote ${opts.json}`);
  }
  Deno.removeSignalListener("SIGINT", interrupted);
  Deno.removeSignalListener("SIGTERM", interrupted);
  return failures.length ? 1 : 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
