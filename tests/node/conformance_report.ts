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
}

/** The part of ginkgo's JSON report (`--json-report`) read here. */
interface GinkgoSpecReport {
  ContainerHierarchyTexts?: string[];
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
      results.push({
        name,
        outcome,
        ...(message ? { message } : {}),
        ...(spec.RunTime ? { seconds: Math.round(spec.RunTime / 1e9) } : {}),
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
  results: SpecResult[];
}

function cell(result: SpecResult | undefined): string {
  if (!result) return "not run";
  return result.outcome;
}

/**
 * The markdown table: one row per spec of `specs` (every spec of the two upstream files, so
 * nothing is hand-picked), one column per run, and a reason column (`reasons` by short name,
 * else the first failure message of a Lace run).
 */
export function renderTable(
  specs: string[],
  runs: Run[],
  reasons: Record<string, string> = {},
): string {
  const lines: string[] = [];
  const header = ["Spec", "Labels", ...runs.map((r) => r.title), "Reason (fail or skip)"];
  lines.push(`| ${header.join(" | ")} |`);
  lines.push(`|${header.map(() => "---").join("|")}|`);
  for (const spec of specs) {
    const found = runs.map((run) => run.results.find((r) => r.name === spec));
    const labels = [...spec.matchAll(/\[(Conformance|NodeConformance|Alpha|Feature:[^\]]+)\]/g)]
      .map((m) => m[1]).join(", ");
    const short = shortName(spec);
    const reason = reasons[short] ??
      found.find((r) => r && r.outcome !== "passed" && r.message)?.message ?? "";
    const row = [short, labels, ...found.map(cell), reason.replaceAll("|", "\\|")];
    lines.push(`| ${row.join(" | ")} |`);
  }
  const totals = runs.map((run) => {
    const c = counts(
      specs.map((s) =>
        run.results.find((r) => r.name === s) ?? { name: s, outcome: "not run" as const }
      ),
    );
    return `${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped, ${c["not run"]} not run`;
  });
  lines.push(`| **Total** (${specs.length} specs) | | ${totals.join(" | ")} | |`);
  return lines.join("\n");
}
