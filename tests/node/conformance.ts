/**
 * `deno task conformance`: upstream's own probe and lifecycle-hook e2e specs (every spec of
 * test/e2e/common/node/container_probe.go and lifecycle_hook.go of the pinned k8s.io/kubernetes,
 * selected by file, not by a list of names) against a real Lace node (tests/node/node.ts, the
 * fixture the tests and scripts/dev node share), once per run:
 * - `lace-ipv4`: the chart's agent, pods with both families (the kubelet probes IPv4);
 * - `lace-ipv6`: the same, every pod IPv6-only;
 * - `control`: no agent and no `lace` plugin: the kubelet's probes are unmarked and the node has
 *   no route to pod addresses, so every network-dependent spec must fail there.
 * Each namespace is its own network on the node (every spec makes one), all reusing the same
 * address ranges. The specs run in parallel through ginkgo (`--procs`). Results: ginkgo's JSON
 * and JUnit reports and results.json under `--out`, the table on stdout and, with `--doc FILE`, between the
 * table markers of FILE (docs/conformance.md).
 *
 *   deno task conformance [--runs lace-ipv4,lace-ipv6,control] [--subset conformance|all]
 *                         [--focus REGEX] [--procs 12] [--out DIR] [--doc docs/conformance.md]
 */
import { parseArgs } from "node:util";
import { join } from "node:path";
import { isExecutable } from "../helpers/executable.ts";
import { kubeToolPath, nodeUnavailableReason } from "../kube/tools.ts";
import { installLace } from "./chart.ts";
import {
  inTestCommand,
  parseJsonReport,
  renderTable,
  type Run,
  type SpecResult,
  TEST_COMMAND_LABELS,
  unpassed,
} from "./conformance_report.ts";
import { startNode } from "./node.ts";

/** The upstream files whose every spec runs. */
export const SPEC_FILES = [
  "test/e2e/common/node/container_probe.go",
  "test/e2e/common/node/lifecycle_hook.go",
];

/** The runs, by name. */
export const RUNS = {
  "lace-ipv4": { title: "Lace IPv4", agent: true, ipv6Only: false },
  "lace-ipv6": { title: "Lace IPv6-only", agent: true, ipv6Only: true },
  "control": { title: "Control (no agent)", agent: false, ipv6Only: false },
} as const;
export type RunName = keyof typeof RUNS;

/** ginkgo's filter for the test command's share: upstream's labels, not a list of names. */
export const TEST_COMMAND_LABEL_FILTER = TEST_COMMAND_LABELS.join(" || ");

async function ginkgoPath(): Promise<string> {
  const goMod = await Deno.readTextFile(new URL("../k8s/go.mod", import.meta.url));
  const version = goMod.match(/github\.com\/onsi\/ginkgo\/v2 (v\S+)/)?.[1];
  if (!version) throw new Error("tests/k8s/go.mod does not pin github.com/onsi/ginkgo/v2");
  const cache = Deno.env.get("LACE_TOOLS_CACHE") ??
    `${Deno.env.get("HOME") ?? "/root"}/.cache/lace/tools`;
  return `${cache}/ginkgo-${version}/ginkgo`;
}

/** Why the run cannot happen here, or undefined. */
export async function conformanceUnavailableReason(): Promise<string | undefined> {
  const node = await nodeUnavailableReason();
  if (node) return node;
  for (const path of [await kubeToolPath("e2e.test"), await ginkgoPath()]) {
    if (!isExecutable(path)) {
      return `"${path}" is not built; run scripts/build_k8s_tools.sh e2e.test`;
    }
  }
  return undefined;
}

/**
 * ginkgo's arguments selecting the specs: the files, and with "conformance" only those labelled
 * [Conformance] or [NodeConformance].
 */
export function specSelection(subset: "conformance" | "all"): string[] {
  return [
    ...SPEC_FILES.map((file) => `--focus-file=${file}`),
    ...(subset === "conformance" ? [`--label-filter=${TEST_COMMAND_LABEL_FILTER}`] : []),
  ];
}

export interface RunOptions {
  subset: "conformance" | "all";
  procs: number;
  /** The run's own output directory. */
  out: string;
  /** Only list the specs (ginkgo's dry run), without a node. */
  dryRun?: boolean;
  /** Only the specs whose name matches (ginkgo's --focus), e.g. to run failed ones again. */
  focus?: string;
}

/** One run: a fresh node, the chart unless it is the control, the specs; returns their results. */
export async function runSpecs(name: RunName, o: RunOptions): Promise<SpecResult[]> {
  const run = RUNS[name];
  await Deno.mkdir(o.out, { recursive: true });
  const e2e = await kubeToolPath("e2e.test");
  const ginkgo = await ginkgoPath();
  const ginkgoArgs = (kubeconfig: string) => [
    `--procs=${o.procs}`,
    "--no-color",
    "--timeout=80m",
    `--output-dir=${o.out}`,
    "--json-report=report.json",
    "--junit-report=junit.xml",
    ...(o.dryRun ? ["--dry-run", "-v"] : []),
    ...specSelection(o.subset),
    ...(o.focus ? [`--focus=${o.focus}`] : []),
    e2e,
    "--",
    `--kubeconfig=${kubeconfig}`,
    `--report-dir=${o.out}`,
    // One node, Ready: nothing else to wait for.
    "--allowed-not-ready-nodes=0",
    "--minStartupPods=0",
  ];
  // ginkgo's output goes to ginkgo.log as it comes (FsFile.writable would hold it until closed).
  const runGinkgo = async (kubeconfig: string) => {
    const log = await Deno.open(join(o.out, "ginkgo.log"), { write: true, create: true });
    const child = new Deno.Command(ginkgo, {
      args: ginkgoArgs(kubeconfig),
      stdout: "piped",
      stderr: "piped",
      cwd: o.out,
    }).spawn();
    const copy = async (stream: ReadableStream<Uint8Array>) => {
      for await (const chunk of stream) {
        let rest = chunk;
        while (rest.length > 0) rest = rest.subarray(await log.write(rest));
      }
    };
    try {
      await Promise.all([copy(child.stdout), copy(child.stderr)]);
      return (await child.status).code;
    } finally {
      log.close();
    }
  };
  if (o.dryRun) {
    await runGinkgo("/dev/null");
    return parseJsonReport(await Deno.readTextFile(join(o.out, "report.json")), SPEC_FILES);
  }
  const began = performance.now();
  await using node = await startNode({
    networkPerNamespace: true,
    upstreamImages: true,
    ipv6Only: run.ipv6Only,
    // The conflist starts without `lace`: the chart's agent chains it; the control has none.
    chainLace: false,
    kubeletApi: true,
  });
  console.error(`[${name}] node up in ${Math.round(performance.now() - began)} ms`);
  if (run.agent) {
    await installLace(node);
    console.error(`[${name}] agent Ready`);
  }
  const specsBegan = performance.now();
  const code = await runGinkgo(node.controlPlane.kubeconfigPath);
  const seconds = Math.round((performance.now() - specsBegan) / 1000);
  console.error(`[${name}] specs ran in ${seconds} s (ginkgo exit ${code})`);
  await Deno.writeTextFile(join(o.out, "seconds"), `${seconds}\n`);
  const report = join(o.out, "report.json");
  try {
    return parseJsonReport(await Deno.readTextFile(report), SPEC_FILES);
  } catch (error) {
    throw new Error(`ginkgo wrote no report at ${report} (see ${o.out}/ginkgo.log)`, {
      cause: error,
    });
  }
}

/** Every spec of the files with its labels, from ginkgo's dry run of the binary (no node). */
export function listSpecs(out: string): Promise<SpecResult[]> {
  return runSpecs("lace-ipv4", { subset: "all", procs: 1, out, dryRun: true });
}

/** The test command's share on Lace, over each family, and what it found. */
export interface ShareResult {
  /** The specs labelled [Conformance] or [NodeConformance], from the binary's own list. */
  expected: SpecResult[];
  runs: Run[];
  /** Per run, each expected spec that did not pass, with its failure message. */
  failures: { run: string; specs: string[] }[];
}

/**
 * Runs the specs upstream labels [Conformance] or [NodeConformance] on a fresh Lace node over
 * IPv4 and one over IPv6-only pods (`runs`), both at once when `concurrent` (each node is its own
 * set of namespaces; each run's node is closed when its run ends, failed or not, and both runs
 * end before this returns or throws).
 */
export async function runTestCommandShare(o: {
  out: string;
  procs: number;
  concurrent: boolean;
  runs?: RunName[];
  focus?: string;
}): Promise<ShareResult> {
  const names = o.runs ?? ["lace-ipv4", "lace-ipv6"];
  const expected = (await listSpecs(join(o.out, "list"))).filter(inTestCommand);
  if (expected.length === 0) {
    throw new Error(`ginkgo's dry run lists no spec labelled ${TEST_COMMAND_LABEL_FILTER}`);
  }
  const one = async (name: RunName): Promise<Run> => ({
    title: RUNS[name].title,
    control: !RUNS[name].agent,
    results: await runSpecs(name, {
      subset: "conformance",
      procs: o.procs,
      out: join(o.out, name),
      focus: o.focus,
    }),
  });
  let settled: PromiseSettledResult<Run>[];
  if (o.concurrent) {
    settled = await Promise.allSettled(names.map(one));
  } else {
    settled = [];
    for (const name of names) settled.push(...await Promise.allSettled([one(name)]));
  }
  const errors = settled.flatMap((s, i) =>
    s.status === "rejected" ? [`${names[i]}: ${s.reason?.stack ?? s.reason}`] : []
  );
  if (errors.length > 0) throw new Error(`A run did not finish:\n${errors.join("\n")}`);
  const runs = settled.map((s) => (s as PromiseFulfilledResult<Run>).value);
  const wanted = o.focus ? expected.filter((s) => new RegExp(o.focus!).test(s.name)) : expected;
  const failures = runs.map((run) => ({ run: run.title, specs: unpassed(wanted, run) }))
    .filter((f) => f.specs.length > 0);
  return { expected: wanted, runs, failures };
}

const BEGIN = "<!-- conformance-table:begin -->";
const END = "<!-- conformance-table:end -->";

/** Replaces the text between the table markers of a document. */
export function replaceTable(doc: string, table: string): string {
  const begin = doc.indexOf(BEGIN), end = doc.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`The document has no ${BEGIN} ... ${END} markers`);
  return `${doc.slice(0, begin + BEGIN.length)}\n${table}\n${doc.slice(end)}`;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      runs: { type: "string", default: "lace-ipv4,lace-ipv6,control" },
      subset: { type: "string", default: "all" },
      procs: { type: "string", default: "12" },
      out: { type: "string" },
      doc: { type: "string" },
      focus: { type: "string" },
      with: { type: "string" },
    },
  });
  const unavailable = await conformanceUnavailableReason();
  if (unavailable) {
    console.error(`Cannot run the conformance specs here: ${unavailable}`);
    Deno.exit(1);
  }
  const names = values.runs.split(",").filter((n) => n !== "") as RunName[];
  for (const n of names) {
    if (!(n in RUNS)) {
      console.error(`Unknown run "${n}"; use ${Object.keys(RUNS).join(", ")}`);
      Deno.exit(2);
    }
  }
  if (values.subset !== "all" && values.subset !== "conformance") {
    console.error(`--subset is "all" or "conformance", not "${values.subset}"`);
    Deno.exit(2);
  }
  const out = values.out ?? await Deno.makeTempDir({ prefix: "lace-conformance-" });
  // Every spec of the files, listed by ginkgo itself, so the table names those that did not run.
  const all = await listSpecs(join(out, "list"));
  const runs: Run[] = [];
  for (const name of names) {
    const results = await runSpecs(name, {
      subset: values.subset,
      procs: Number(values.procs),
      out: join(out, name),
      focus: values.focus,
    });
    runs.push({ title: RUNS[name].title, control: !RUNS[name].agent, results });
    await Deno.writeTextFile(join(out, "results.json"), JSON.stringify(runs, null, 2));
  }
  // Earlier invocations' runs (their results.json files, comma-separated) as further columns, in
  // the order of RUNS; a results.json from before `control` was recorded names it by title.
  for (const file of (values.with ?? "").split(",").filter((f) => f !== "")) {
    for (const run of JSON.parse(await Deno.readTextFile(file)) as Run[]) {
      const control = run.control ??
        Object.values(RUNS).some((r) => r.title === run.title && !r.agent);
      runs.push({ ...run, control });
    }
  }
  const titles: string[] = Object.values(RUNS).map((r) => r.title);
  const order = (run: Run) =>
    titles.includes(run.title) ? titles.indexOf(run.title) : titles.length;
  runs.sort((a, b) => order(a) - order(b));
  const table = renderTable(
    all.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
    runs,
  );
  await Deno.writeTextFile(join(out, "table.md"), table);
  console.log(table);
  if (values.doc) {
    await Deno.writeTextFile(values.doc, replaceTable(await Deno.readTextFile(values.doc), table));
  }
  console.error(`results in ${out}`);
}
