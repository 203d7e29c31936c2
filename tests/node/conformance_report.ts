/**
 * The results of upstream's e2e specs (ginkgo's JSON report) and the table docs/conformance.md
 * publishes: each spec, its outcome in each run (Lace over IPv4, over IPv6-only pods, the control
 * without the agent), and why every spec that did not pass did not. Pure text in, text out.
 */

export type Outcome = "passed" | "failed" | "skipped" | "not run";

export interface SpecResult {
  /** The spec's full text as ginkgo names it, labels included. */
  name: string;
  outcome: Outcome;
  /** The failure's or skip's message, first line. */
  message?: string;
  seconds?: number;
  /** ginkgo's labels of the spec and its containers (e.g. Conformance, NodeConformance, Alpha). */
  labels?: string[];
}

/**
 * The labels that put a spec in the README's test command (tests/node/conformance_test.ts):
 * upstream's own marks, [Conformance] and [NodeConformance]; every other spec of the two files
 * runs in `deno task conformance` only.
 */
export const TEST_COMMAND_LABELS = ["Conformance", "NodeConformance"] as const;

/** Whether upstream's labels put the spec in the README's test command. */
export function inTestCommand(spec: SpecResult): boolean {
  return (spec.labels ?? []).some((l) => (TEST_COMMAND_LABELS as readonly string[]).includes(l));
}

/** The part of ginkgo's JSON report (`--json-report`) read here. */
interface GinkgoSpecReport {
  ContainerHierarchyTexts?: string[];
  ContainerHierarchyLabels?: string[][];
  LeafNodeLabels?: string[];
  LeafNodeType?: string;
  LeafNodeText?: string;
  LeafNodeLocation?: { FileName?: string };
  State?: string;
  RunTime?: number;
  Failure?: { Message?: string };
}

/**
 * The specs (`It` nodes) of a ginkgo JSON report that are declared in one of `files` (paths
 * ending the reported file names), whether they ran, failed or were skipped: their number does
 * not depend on focus, so a table of them names every spec of those files.
 */
export function parseJsonReport(json: string, files: string[]): SpecResult[] {
  const suites = JSON.parse(json) as { SpecReports?: GinkgoSpecReport[] }[];
  const results: SpecResult[] = [];
  for (const suite of suites) {
    for (const spec of suite.SpecReports ?? []) {
      if (spec.LeafNodeType !== "It") continue;
      const file = spec.LeafNodeLocation?.FileName ?? "";
      if (!files.some((f) => file.endsWith(f))) continue;
      const name = [...(spec.ContainerHierarchyTexts ?? []), spec.LeafNodeText ?? ""].join(" ");
      const state = spec.State ?? "";
      const outcome: Outcome = state === "passed"
        ? "passed"
        : state === "skipped" || state === "pending"
        ? "skipped"
        : "failed";
      const message = spec.Failure?.Message?.trim().split("\n")[0].slice(0, 300);
      const labels = [
        ...new Set([
          ...(spec.ContainerHierarchyLabels ?? []).flat(),
          ...(spec.LeafNodeLabels ?? []),
        ]),
      ];
      results.push({
        name,
        outcome,
        ...(message ? { message } : {}),
        ...(spec.RunTime ? { seconds: Math.round(spec.RunTime / 1e9) } : {}),
        ...(labels.length > 0 ? { labels } : {}),
      });
    }
  }
  return results;
}

/** A spec's name without ginkgo's labels in brackets, for the table. */
export function shortName(name: string): string {
  return name.replace(/\s*\[[^\]]*\]/g, (label) => label.startsWith(" [sig-") ? label : "")
    .replace(/^\[sig-node\]\s*/, "").trim();
}

/** Counts of each outcome in one run. */
export function counts(results: SpecResult[]): Record<Outcome, number> {
  const c: Record<Outcome, number> = { passed: 0, failed: 0, skipped: 0, "not run": 0 };
  for (const r of results) c[r.outcome]++;
  return c;
}

export interface Run {
  /** Column title, e.g. "Lace IPv4". */
  title: string;
  /** The run without the agent, whose failures of network-dependent specs are expected. */
  control?: boolean;
  results: SpecResult[];
}

/**
 * Each of `expected` that did not pass in `run`, as "spec: outcome: message" lines (a spec the
 * run did not report is "not run"): empty when every one passed.
 */
export function unpassed(expected: SpecResult[], run: Run): string[] {
  return expected.flatMap((spec) => {
    const found = run.results.find((r) => r.name === spec.name);
    if (found?.outcome === "passed") return [];
    const outcome = found?.outcome ?? "not run";
    return [`${shortName(spec.name)}: ${outcome}${found?.message ? `: ${found.message}` : ""}`];
  });
}

/** Where a spec runs: the README's test command runs the labelled ones, the task all of them. */
export function runsIn(spec: SpecResult): string {
  return inTestCommand(spec) ? "test command" : "`deno task conformance` only";
}

const ALPHA_SKIP = "Skipped by the e2e suite itself: an alpha feature gate off by default (the " +
  "node runs the kubelet's default gates); the same in every run";
const CONTROL_ONLY = "Fails in the control only (no agent: the probe or the hook pod's startup " +
  "probe is not tagged, no route)";

/**
 * Why a spec did not pass somewhere: skipped everywhere as an alpha spec, failed in the control
 * runs only (the point of the control), else the first failure's or skip's message.
 */
export function reasonFor(
  spec: SpecResult,
  runs: Run[],
  found: (SpecResult | undefined)[],
): string {
  const ran = found.filter((r): r is SpecResult => r !== undefined);
  if (ran.length === 0 || ran.every((r) => r.outcome === "passed")) return "";
  if (ran.every((r) => r.outcome === "skipped") && (spec.labels ?? []).includes("Alpha")) {
    return ALPHA_SKIP;
  }
  const notPassed = runs.filter((_, i) => found[i] && found[i]!.outcome !== "passed");
  const message = ran.find((r) => r.outcome !== "passed" && r.message)?.message ?? "";
  if (notPassed.every((run) => run.control)) {
    return message ? `${CONTROL_ONLY}: ${message}` : CONTROL_ONLY;
  }
  return message;
}

function cell(result: SpecResult | undefined): string {
  if (!result) return "not run";
  return result.outcome;
}

/**
 * The markdown table: one row per spec of `specs` (every spec of the two upstream files, as
 * ginkgo's dry run lists them, so nothing is hand-picked), its labels, where it runs, one column
 * per run, and a reason column (`reasons` by short name, else reasonFor()).
 */
export function renderTable(
  specs: SpecResult[],
  runs: Run[],
  reasons: Record<string, string> = {},
): string {
  const lines: string[] = [];
  const header = [
    "Spec",
    "Labels",
    "Runs in",
    ...runs.map((r) => r.title),
    "Reason (fail or skip)",
  ];
  lines.push(`| ${header.join(" | ")} |`);
  lines.push(`|${header.map(() => "---").join("|")}|`);
  for (const spec of specs) {
    const found = runs.map((run) => run.results.find((r) => r.name === spec.name));
    const labels = (spec.labels ?? []).filter((l) => !l.startsWith("sig-")).join(", ");
    const short = shortName(spec.name);
    const reason = reasons[short] ?? reasonFor(spec, runs, found);
    const row = [short, labels, runsIn(spec), ...found.map(cell), reason.replaceAll("|", "\\|")];
    lines.push(`| ${row.join(" | ")} |`);
  }
  const totals = runs.map((run) => {
    const c = counts(
      specs.map((s) =>
        run.results.find((r) => r.name === s.name) ?? { name: s.name, outcome: "not run" as const }
      ),
    );
    return `${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped, ${c["not run"]} not run`;
  });
  const inCommand = specs.filter(inTestCommand).length;
  lines.push(
    `| **Total** (${specs.length} specs) | | ${inCommand} in the test command | ${
      totals.join(" | ")
    } | |`,
  );
  return lines.join("\n");
}
