/**
 * The README, the pages of docs/ and the chart's README name flags, commands, chart keys,
 * metrics, Event reasons and files. Each must exist, so that a rename in the code fails here
 * instead of leaving a page that lies, and the chart README's values table (which `deno task
 * chart-docs` writes) must name every key of values.yaml with its default. What counts as naming
 * one is the markup docs/testing.md ("Docs that cannot drift") describes: code spans, the first
 * column of tables, sh blocks. docs/mutation.md is generated from reports and left out. The pages,
 * deploy/ and every source (comments, test names, strings) must name no tracker reference.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { Metrics } from "../lib/agent/metrics.ts";
import { NetcheckMetrics } from "../lib/netcheck/report/metrics.ts";
import {
  codeSpans,
  type Fence,
  headingAnchors,
  laceInvocations,
  localLinks,
  splitFences,
  tables,
} from "./helpers/docs_markup.ts";

const REPO = fileURLToPath(new URL("..", import.meta.url));

/** What .gitignore names (build outputs): a page may name them before they are built. */
const BUILD_OUTPUTS = Deno.readTextFileSync(join(REPO, ".gitignore")).split("\n")
  .filter((l) => l.startsWith("/") && !l.includes("*")).map((l) => l.slice(1));

/** A page: its path from the repository, text, prose (fences blanked) and fences. */
interface Page {
  path: string;
  text: string;
  prose: string;
  fences: Fence[];
}

/** The chart's README: its values table is the one list of the chart's keys. */
const CHART_README = "deploy/helm/lace/README.md";

function readPages(): Page[] {
  const paths = ["README.md", CHART_README];
  for (const e of Deno.readDirSync(join(REPO, "docs"))) {
    if (e.isFile && e.name.endsWith(".md") && e.name !== "mutation.md") {
      paths.push(`docs/${e.name}`);
    }
  }
  return paths.sort().map((path) => {
    const text = Deno.readTextFileSync(join(REPO, path));
    return { path, text, ...splitFences(text) };
  });
}

const PAGES = readPages();

/**
 * Flags of other programs the pages name in backticks, by program: each was checked by hand when
 * added here. A `lace` flag never belongs in this list.
 */
const FOREIGN_FLAGS: Record<string, string> = {
  "--set": "helm",
  "--set-json": "helm",
  "--create-namespace": "helm",
  "--logs": "helm test",
  "--kubelet-cgroups": "kubelet",
  "--disable-agent": "k3s server",
  "--focus-file": "ginkgo",
  "--label-filter": "ginkgo",
  "--max-filesize": "curl",
  "--max-time": "curl",
  "--build-arg": "docker build",
  "--allow-all": "deno",
  "--no-check": "deno test",
  "--cached-only": "deno",
  "--v8-flags": "deno run",
  "--dont-fragment": "iperf3",
  "--archive": "kubectl krew install",
};

/** Programs of this repository whose flags a page may name, and the file that parses them. */
const OWN_PROGRAMS = [
  "tests/node/dev_node.ts", // scripts/dev node
  "tests/node/conformance.ts", // deno task conformance
  "bench/main.ts", // deno task bench
  "scripts/compile.ts", // deno task compile
  "scripts/release.ts", // deno task release
  "scripts/setup.sh",
  "scripts/mutate.ts",
];

/** What `lace --help` and each command's `--help` say. */
interface LaceHelp {
  commands: Map<string, { usage: string; flags: Set<string> }>;
  envs: Set<string>;
}

async function run(args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", join(REPO, "main.ts"), ...args],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
}

async function laceHelp(): Promise<LaceHelp> {
  const top = await run(["--help"]);
  const list = top.split("Commands:")[1].split("\n\n")[0];
  const names = [...list.matchAll(/^ {2}(\S+) {2,}/gm)].map((m) => m[1]);
  assert.ok(names.includes("doctor"), `lace --help lists no commands:\n${top}`);
  const commands = new Map<string, { usage: string; flags: Set<string> }>();
  const envs = new Set<string>();
  for (const name of names) {
    const help = await run([name, "--help"]);
    // cobra's layout: `  -x, --name` or `      --name`.
    const flags = new Set(
      [...help.matchAll(/^ {2}(?:(-[a-zA-Z]), | {4})(--[a-z0-9-]+)/gm)].flatMap((m) =>
        m[1] ? [m[1], m[2]] : [m[2]]
      ),
    );
    for (const m of help.matchAll(/\(--no-([a-z0-9-]+)/g)) flags.add(`--no-${m[1]}`);
    for (const m of help.matchAll(/env ([A-Z0-9_]+(?:, [A-Z0-9_]+)*)/g)) {
      for (const env of m[1].split(", ")) envs.add(env);
    }
    commands.set(name, { usage: help.split("\n")[0], flags });
  }
  return { commands, envs };
}

const HELP = await laceHelp();
const LACE_FLAGS = new Set([...HELP.commands.values()].flatMap((c) => [...c.flags]));

/** Whether a repository program other than `lace` parses `flag` (it appears in its source). */
function ownProgramFlag(flag: string): boolean {
  return OWN_PROGRAMS.some((p) => Deno.readTextFileSync(join(REPO, p)).includes(flag));
}

/** A flag span's problem, or undefined: `--x` or `--x=value`. */
export function flagProblem(span: string, laceFlags: Set<string>): string | undefined {
  const flag = span.split(/[= ]/)[0];
  if (laceFlags.has(flag) || flag in FOREIGN_FLAGS || ownProgramFlag(flag)) return undefined;
  return `${flag} is no flag of any lace command (nor of a program listed in FOREIGN_FLAGS)`;
}

/** Every source file's text, for names the code must still contain. */
const SOURCES = (() => {
  const texts: string[] = [Deno.readTextFileSync(join(REPO, "main.ts"))];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(join(REPO, dir))) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory && e.name !== "node_modules") walk(path);
      else if (/\.(ts|sh|yaml|c|h|service|env)$/.test(e.name)) {
        texts.push(Deno.readTextFileSync(join(REPO, path)));
      }
    }
  };
  for (const dir of ["lib", "scripts", "tests", "deploy", "bench", "bpf"]) walk(dir);
  return texts.join("\n");
})();

const VALUES = parse(Deno.readTextFileSync(join(REPO, "deploy/helm/lace/values.yaml"))) as Record<
  string,
  unknown
>;

/** The value at `path` in values.yaml; `free` when the path goes into a list or an empty map. */
export function valueAt(
  values: Record<string, unknown>,
  path: string,
): { found: boolean; value?: unknown } {
  let cur: unknown = values;
  for (const key of path.split(".")) {
    if (Array.isArray(cur) || (isMap(cur) && Object.keys(cur).length === 0)) return { found: true };
    if (!isMap(cur) || !(key in cur)) return { found: false };
    cur = cur[key];
  }
  return { found: true, value: cur };
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Dotted names that start like a chart key but are something else, and what they are. */
const NOT_CHART_KEYS: Record<string, string> = {
  "netcheck.connect": "a JUnit classname of lace netcheck (lib/netcheck/report/formats.ts)",
  "netcheck.latency": "a JUnit classname of lace netcheck",
  "netcheck.bandwidth": "a JUnit classname of lace netcheck",
  "netcheck.isolation": "a JUnit classname of lace netcheck",
};

/** The chart key a span names (`node.podCIDRs`, `image.tag=0.1.0`), or undefined. */
function chartKey(span: string): string | undefined {
  const m = /^([A-Za-z]+)\.([A-Za-z0-9.]+)(=.*)?$/.exec(span);
  if (!m || !isMap(VALUES[m[1]])) return undefined;
  const key = `${m[1]}.${m[2]}`.replace(/\.$/, "");
  return key in NOT_CHART_KEYS ? undefined : key;
}

/** Every leaf of values.yaml: maps are walked, lists and empty maps are leaves. */
export function valueLeaves(values: Record<string, unknown>, prefix = ""): string[] {
  return Object.entries(values).flatMap(([k, v]) => {
    const path = prefix ? `${prefix}.${k}` : k;
    return isMap(v) && Object.keys(v).length > 0 ? valueLeaves(v, path) : [path];
  });
}

/** The metrics the agent and `lace netcheck` register, with their label names. */
function registeredMetrics(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const registries = [new Metrics(() => undefined).registry, new NetcheckMetrics().registry];
  for (const registry of registries) {
    for (const metric of registry.getMetricsAsArray()) {
      const m = metric as unknown as { name: string; labelNames?: string[] };
      out.set(m.name, new Set(m.labelNames ?? []));
    }
  }
  return out;
}

const METRICS = registeredMetrics();

/** The BPF program's source: its section and symbol names (`lace_connect4`) are no metrics. */
const BPF_SOURCE = Deno.readTextFileSync(join(REPO, "bpf/lace.bpf.c")) +
  Deno.readTextFileSync(join(REPO, "lib/datapath/pins.ts"));

/** A metric span's problem (`lace_x`, `lace_x{label="v"}`, `lace_x 1`), or undefined. */
export function metricProblem(
  span: string,
  metrics: Map<string, Set<string>>,
): string | undefined {
  const m = /^(lace_[a-z0-9_]+)(\{([^}]*)\})?/.exec(span);
  if (!m) return undefined;
  const base = m[1].replace(/_(bucket|sum|count)$/, "");
  const name = metrics.has(m[1]) ? m[1] : base;
  const labels = metrics.get(name);
  if (!labels) return `${m[1]} is no metric the agent or lace netcheck registers`;
  const named = (m[3] ?? "").split(",").map((l) => l.split("=")[0].trim()).filter(Boolean);
  const unknown = named.filter((l) => !labels.has(l));
  return unknown.length ? `${name} has no label ${unknown.join(", ")}` : undefined;
}

/**
 * The Event reasons the code records: the second argument of the recorder's warn() and normal(),
 * of the follower's emit(), and the chaining reasons' table.
 */
export function recordedEventReasons(source: string): Set<string> {
  const reasons = new Set<string>();
  const patterns = [
    /\.(?:warn|normal)\(\s*[^;"]{1,120}?,\s*"([A-Z][A-Za-z]+)"\s*,/g,
    /emit\(\s*"(?:Warning|Normal)",\s*"([A-Z][A-Za-z]+)"/g,
  ];
  for (const p of patterns) for (const m of source.matchAll(p)) reasons.add(m[1]);
  const table = /EVENT_REASONS[^{]*\{([^}]*)\}/.exec(source)?.[1] ?? "";
  for (const m of table.matchAll(/:\s*"([A-Z][A-Za-z]+)"/g)) reasons.add(m[1]);
  return reasons;
}

const PRODUCT_SOURCE = (() => {
  const texts: string[] = [];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(join(REPO, dir))) {
      const path = `${dir}/${e.name}`;
      if (e.isDirectory) walk(path);
      else if (e.name.endsWith(".ts") && !e.name.endsWith("_test.ts")) {
        texts.push(Deno.readTextFileSync(join(REPO, path)));
      }
    }
  };
  walk("lib");
  return texts.join("\n");
})();

const EVENT_REASONS = recordedEventReasons(PRODUCT_SOURCE);

/** The kubelet's and controllers' own Event reasons, which the pages name too. */
const KUBERNETES_REASONS = new Set([
  "FailedPreStopHook",
  "FailedPostStartHook",
  "Unhealthy",
  "FailedCreate",
]);

/** Event reasons a page names: `Event \`X\`` in prose, and the first column of Event tables. */
export function namedEventReasons(prose: string): string[] {
  const out = [...prose.matchAll(/\bEvents?\s+`([A-Za-z]+)`/g)].map((m) => m[1]);
  for (const table of tables(prose)) {
    if (!/^Event\b/.test(table[0][0] ?? "")) continue;
    for (const row of table.slice(1)) {
      for (const span of codeSpans(row[0])) out.push(span.text.split(" ")[0]);
    }
  }
  return out;
}

/** How many names each check looked at, over every page: a check that sees none proves nothing. */
const CHECKED: Record<string, number> = {};
const saw = (check: string) => CHECKED[check] = (CHECKED[check] ?? 0) + 1;

/** The problems of one page, by check. */
function pageProblems(page: Page): Record<string, string[]> {
  const problems: Record<string, string[]> = {
    flags: [],
    envs: [],
    chart: [],
    metrics: [],
    events: [],
    commands: [],
    paths: [],
    links: [],
  };
  const at = (p: string) => `${page.path}: ${p}`;
  const tasks = Object.keys(
    (JSON.parse(Deno.readTextFileSync(join(REPO, "deno.json"))) as { tasks: object }).tasks,
  );
  const devCommands = [
    ...Deno.readTextFileSync(join(REPO, "scripts/dev")).matchAll(/^ {2}(\w+)\)/gm),
  ]
    .map((m) => m[1]);
  const devNodeUsage = /const USAGE = ([^;]+);/.exec(
    Deno.readTextFileSync(join(REPO, "tests/node/dev_node.ts")),
  )?.[1] ?? "";
  for (const { text: span } of codeSpans(page.prose)) {
    if (/^--[a-z0-9]/.test(span)) {
      saw("flags");
      const p = flagProblem(span, LACE_FLAGS);
      if (p) problems.flags.push(at(p));
    }
    const env = /^(LACE_[A-Z0-9_]+)/.exec(span)?.[1];
    if (env) saw("envs");
    if (env && !HELP.envs.has(env) && !new RegExp(`\\b${env}\\b`).test(SOURCES)) {
      problems.envs.push(at(`${env} is read by no flag and named nowhere in the code`));
    }
    const key = chartKey(span);
    if (key) saw("chart");
    if (key && !valueAt(VALUES, key).found) {
      problems.chart.push(at(`${key} is no key of deploy/helm/lace/values.yaml`));
    }
    if (span.startsWith("lace_")) saw("metrics");
    const metric = metricProblem(span, METRICS);
    if (metric && !BPF_SOURCE.includes(span.split(/[{ ]/)[0])) problems.metrics.push(at(metric));
    const lace = /^lace ([a-z][a-z-]*)(.*)$/.exec(span);
    if (lace) saw("commands");
    if (lace) {
      const words = lace[2].trim().split(" ").filter(Boolean);
      problems.commands.push(...commandProblems(lace[1], words).map(at));
    }
    const dev = /^scripts\/dev(?: (\w+))?(?: (\w+))?/.exec(span);
    if (dev?.[1] && !devCommands.includes(dev[1])) {
      problems.commands.push(at(`scripts/dev has no command ${dev[1]}`));
    } else if (dev?.[1] === "node" && dev[2] && !devNodeUsage.includes(dev[2])) {
      problems.commands.push(at(`scripts/dev node has no command ${dev[2]}`));
    }
    const task = /^deno task ([a-z:-]+)/.exec(span)?.[1];
    if (task && !tasks.includes(task)) problems.commands.push(at(`deno.json has no task ${task}`));
    const path = /^((?:lib|tests|scripts|deploy|bench|bpf|docs)\/[\w./-]*[\w/])(?::\d+)?$/.exec(
      span,
    )?.[1];
    if (path) saw("paths");
    if (path && !existsSync(join(REPO, path)) && !BUILD_OUTPUTS.some((o) => path.startsWith(o))) {
      problems.paths.push(at(`${path} does not exist`));
    }
  }
  for (const reason of namedEventReasons(page.prose)) {
    saw("events");
    if (!EVENT_REASONS.has(reason) && !KUBERNETES_REASONS.has(reason)) {
      problems.events.push(at(`${reason} is no Event reason the code records`));
    }
  }
  for (const link of localLinks(page.prose)) {
    saw("links");
    const [file, anchor] = link.split("#");
    const target = file ? join(REPO, dirname(page.path), file) : join(REPO, page.path);
    if (!existsSync(target)) {
      problems.links.push(at(`link ${link}: ${relative(REPO, target)} does not exist`));
    } else if (anchor && target.endsWith(".md")) {
      if (!headingAnchors(Deno.readTextFileSync(target)).has(anchor)) {
        problems.links.push(at(`link ${link}: no heading with anchor #${anchor}`));
      }
    }
  }
  for (const fence of page.fences.filter((f) => f.lang === "sh")) {
    for (const { command, words } of laceInvocations(fence.text)) {
      problems.commands.push(...commandProblems(command, words).map(at));
    }
    for (const m of fence.text.matchAll(/--set(?:-json)? '?([A-Za-z][\w.]*)=/g)) {
      if (!valueAt(VALUES, m[1]).found) {
        problems.chart.push(at(`--set ${m[1]}: no key of deploy/helm/lace/values.yaml`));
      }
    }
  }
  return problems;
}

/** The problems of `lace COMMAND WORDS…`: an unknown command, subcommand or flag. */
function commandProblems(command: string, words: string[]): string[] {
  const spec = HELP.commands.get(command);
  if (!spec) return [`lace ${command}: no such command (lace --help)`];
  const out: string[] = [];
  const sub = words[0];
  if (sub && /^[a-z]+$/.test(sub) && !new RegExp(`\\b${sub}\\b`).test(spec.usage)) {
    out.push(`lace ${command} ${sub}: its usage names no ${sub} ("${spec.usage}")`);
  }
  for (const word of words.filter((w) => w.startsWith("--"))) {
    const flag = word.split("=")[0];
    if (!spec.flags.has(flag) && flag !== "--help") {
      out.push(`lace ${command} ${flag}: lace ${command} --help names no such flag`);
    }
  }
  return out;
}

const PROBLEMS = PAGES.map(pageProblems);

/** The fewest names each check sees in today's pages: fewer means the markup was misread. */
const AT_LEAST: Record<string, number> = {
  flags: 100,
  envs: 20,
  chart: 40,
  metrics: 40,
  events: 30,
  commands: 30,
  paths: 100,
  links: 60,
};

/** What each check's test calls the names it checks. */
const NAMES: Record<string, string> = {
  flags: "flags",
  envs: "environment variables",
  chart: "chart keys",
  metrics: "metrics or metric labels",
  events: "Event reasons",
  commands: "commands, subcommands or command flags",
  paths: "files",
  links: "link targets or anchors",
};

for (const check of Object.keys(PROBLEMS[0])) {
  Deno.test(`the README and docs name no ${NAMES[check]} that do not exist`, () => {
    assert.ok(
      (CHECKED[check] ?? 0) >= AT_LEAST[check],
      `only ${CHECKED[check] ?? 0} ${check} found in the pages: is the markup still read?`,
    );
    assert.deepEqual(PROBLEMS.flatMap((p) => p[check]), []);
  });
}

Deno.test("every Event reason the code records is explained in docs/troubleshooting.md", () => {
  // Guards the scan: the recorder's calls read differently would find nothing, and pass.
  assert.ok(EVENT_REASONS.size >= 15, `only ${[...EVENT_REASONS].join(", ")} found in lib/`);
  const page = PAGES.find((p) => p.path === "docs/troubleshooting.md")!;
  const explained = new Set(namedEventReasons(page.prose));
  assert.deepEqual([...EVENT_REASONS].filter((r) => !explained.has(r)).sort(), []);
});

Deno.test("the values table of the chart's README names every chart key, with its default", () => {
  const page = PAGES.find((p) => p.path === CHART_README)!;
  const table = tables(page.prose).find((t) => t[0][0] === "key" && t[0][2] === "default");
  assert.ok(table, `${CHART_README} has no table headed | key | type | default | description |`);
  const named = new Set<string>();
  const wrong: string[] = [];
  for (const row of table.slice(1)) {
    const keys = codeSpans(row[0]).map((s) => s.text);
    // A section's row (no default) names no key: the keys under it have rows of their own.
    if (row[2] === "") continue;
    for (const key of keys) named.add(key);
    const defaults = codeSpans(row[2]);
    if (keys.length !== 1 || defaults.length !== 1 || row[2] !== `\`${defaults[0].text}\``) {
      continue;
    }
    const text = defaults[0].text;
    const actual = valueAt(VALUES, keys[0]).value;
    const same = text === actual || JSON.stringify(parse(text)) === JSON.stringify(actual);
    if (!same) {
      wrong.push(`${keys[0]}: the table says ${text}, values.yaml ${JSON.stringify(actual)}`);
    }
  }
  const covered = (leaf: string) => {
    const parts = leaf.split(".");
    return parts.some((_, i) => named.has(parts.slice(0, i + 1).join(".")));
  };
  assert.deepEqual(valueLeaves(VALUES).filter((l) => !covered(l)), [], "keys the table misses");
  assert.deepEqual(
    [...named].filter((k) => !valueAt(VALUES, k).found),
    [],
    "keys that do not exist",
  );
  assert.deepEqual(wrong, [], "defaults that differ from values.yaml");
});

Deno.test("every sh block of the README and docs parses (bash -n)", async () => {
  const blocks = PAGES.flatMap((p) =>
    p.fences.filter((f) => f.lang === "sh").map((f) => ({ path: p.path, text: f.text }))
  );
  const inReadme = blocks.filter((b) => b.path === "README.md").length;
  assert.ok(inReadme >= 3, `the README has ${inReadme} sh blocks, fewer than its three examples`);
  const broken: string[] = [];
  for (const block of blocks) {
    const child = new Deno.Command("bash", { args: ["-n"], stdin: "piped", stderr: "piped" })
      .spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(block.text + "\n"));
    await writer.close();
    const out = await child.output();
    if (!out.success) {
      broken.push(`${block.path}: ${new TextDecoder().decode(out.stderr)}in:\n${block.text}`);
    }
  }
  assert.deepEqual(broken, []);
});

Deno.test("flagProblem() names a flag no lace command has, and passes one it has, with its value", () => {
  const flags = new Set(["--pod-cidrs"]);
  assert.equal(flagProblem("--pod-cidrs=10.0.0.0/8", flags), undefined);
  assert.equal(flagProblem("--pod-cidrs CIDRS", flags), undefined);
  assert.equal(flagProblem("--set", flags), undefined);
  assert.match(flagProblem("--pod-cidr", flags)!, /--pod-cidr is no flag/);
});

Deno.test("metricProblem() names a metric nobody registers and a label it lacks", () => {
  const metrics = new Map([["lace_x_total", new Set(["reason"])], ["lace_h", new Set<string>()]]);
  assert.equal(metricProblem('lace_x_total{reason="a"|"b"}', metrics), undefined);
  assert.equal(metricProblem("lace_h_bucket", metrics), undefined);
  assert.equal(metricProblem("lace_x_total 1", metrics), undefined);
  assert.match(metricProblem("lace_y", metrics)!, /lace_y is no metric/);
  assert.match(metricProblem("lace_x_total{network}", metrics)!, /has no label network/);
});

Deno.test("valueAt() and valueLeaves() walk maps, and stop at lists and empty maps", () => {
  const values = { a: { b: 1, c: {}, d: [] }, e: "x" };
  assert.deepEqual(valueLeaves(values), ["a.b", "a.c", "a.d", "e"]);
  assert.deepEqual(valueAt(values, "a.b"), { found: true, value: 1 });
  assert.equal(valueAt(values, "a.c.anything").found, true);
  assert.equal(valueAt(values, "a.z").found, false);
  assert.equal(valueAt(values, "e.z").found, false);
});

Deno.test("recordedEventReasons() finds the recorder's and the follower's reasons, not log lines", () => {
  const source = [
    'events.warn(podObjectRef(p.pod), "AddressClash", message(a, p));',
    'this.events.normal(node,\n  "Attached", text);',
    'events?.emit("Warning", "KubeletLookalike", text);',
    'const EVENT_REASONS: Record<R, string> = { chained: "CniChained", failed: "CniChainFailed" };',
    'log.warn("Not attached: {reason}", { reason });',
    'limitedLog(log, "warning", aboutPod("ProbeIgnored", pod), "Pod {pod}", {});',
  ].join("\n");
  assert.deepEqual(
    [...recordedEventReasons(source)].sort(),
    ["AddressClash", "Attached", "CniChainFailed", "CniChained", "KubeletLookalike"],
  );
});

Deno.test("namedEventReasons() reads Event `X` in prose and the first column of Event tables", () => {
  const prose = [
    "a Warning Event `AttachRefused` on the pod, Events `ProbeIgnored` too; not `Other`.",
    "",
    "| Event reason | Meaning |",
    "|---|---|",
    "| `CniChained`, `CniChainRestored` (Normal) | chained |",
    "",
    "| Check | Meaning |",
    "|---|---|",
    "| `bpffs` | no |",
  ].join("\n");
  assert.deepEqual(namedEventReasons(prose), [
    "AttachRefused",
    "ProbeIgnored",
    "CniChained",
    "CniChainRestored",
  ]);
});

/**
 * A tracker reference: the code and the pages cannot resolve it, and the history belongs in
 * commit messages (STYLE.md, "Comments that age well").
 */
export const TRACKER_REFERENCE = /\b[Ii]ssues? #?\d+|\b[Ff]inding \d+|(?<![\w/.#&-])#\d{2,}\b/;

/**
 * What may name no tracker reference: the pages, deploy/, and every source of the product, its
 * tests, benchmarks, scripts and BPF program (comments, test names and strings alike).
 */
const TRACKER_CHECKED = [
  "README.md",
  "docs",
  "deploy",
  "main.ts",
  "lib",
  "tests",
  "bench",
  "scripts",
  "bpf",
  ".ci",
  ".github",
];
/**
 * The benchmarks' journal and output, kept with their runs and machines as they were measured,
 * and the mutation summary scripts/mutate.ts generates.
 */
const TRACKER_UNCHECKED = new Set(["bench/RESULTS.md", "bench/results.json", "docs/mutation.md"]);

/** Every text file under TRACKER_CHECKED but build outputs and dependencies (.gitignore). */
export function trackerCheckedFiles(root = REPO): { path: string; text: string }[] {
  const files: { path: string; text: string }[] = [];
  const generated = (path: string) => BUILD_OUTPUTS.some((o) => path === o || path.startsWith(o));
  const visit = (path: string) => {
    if (TRACKER_UNCHECKED.has(path)) return;
    const info = Deno.lstatSync(join(root, path));
    if (info.isDirectory) {
      if (generated(`${path}/`)) return;
      for (const e of Deno.readDirSync(join(root, path))) visit(`${path}/${e.name}`);
    } else if (info.isFile && !generated(path)) {
      const text = Deno.readTextFileSync(join(root, path));
      if (!text.includes("\0")) files.push({ path, text }); // a BPF object is no source
    }
  };
  for (const path of TRACKER_CHECKED) if (existsSync(join(root, path))) visit(path);
  return files;
}

Deno.test("the README, docs, deploy/ and the sources name no tracker issues or findings", () => {
  const files = trackerCheckedFiles();
  const paths = new Set(files.map((f) => f.path));
  for (
    const path of ["README.md", "main.ts", "bpf/lace.bpf.c", "scripts/dev", "tests/docs_test.ts"]
  ) {
    assert.ok(paths.has(path), `${path} is not read`);
  }
  // Fewer means the walk lost a folder.
  assert.ok(files.filter((f) => f.path.startsWith("lib/")).length >= 300, "lib/ is not read");
  assert.ok(files.filter((f) => f.path.startsWith("tests/")).length >= 150, "tests/ is not read");
  assert.ok(!paths.has("lib/kube/client_node.bundle.js"), "a build output is read");
  const found = files.flatMap(({ path, text }) =>
    text.split("\n").flatMap((line, i) =>
      TRACKER_REFERENCE.test(line) ? [`${path}:${i + 1}: ${line.trim()}`] : []
    )
  );
  assert.deepEqual(found, []);
});

Deno.test("TRACKER_REFERENCE finds issue and finding numbers, not colours, ports or entities", () => {
  // Written in pieces, so that this file does not name what it looks for.
  const planted = (...pieces: string[]) => pieces.join("");
  for (
    const line of [
      planted("(issue ", "24, finding ", "1)"),
      planted("Issues ", "8, 16 and 28"),
      planted("see #", "123"),
      planted("// finding ", "3: x"),
      planted('Deno.test("refuses it (issue ', '9)"'),
    ]
  ) {
    assert.ok(TRACKER_REFERENCE.test(line), line);
  }
  for (
    const line of ["color: #fff", "port 9808", "a/#12 anchor", "x.md#the-dev-node", "&#60;x&#62;"]
  ) {
    assert.ok(!TRACKER_REFERENCE.test(line), line);
  }
});
