/**
 * Turns StrykerJS JSON reports into the committed summary `docs/mutation.md`:
 * the score per module and every surviving mutant, each either explained as
 * equivalent (from `equivalent.json`) or marked unexplained. Pure, so the
 * matching of survivors to their explanations is unit-tested.
 */
import type { MutationModule } from "./modules.ts";

/** The parts of a Stryker mutation-testing JSON report this summary reads. */
export interface StrykerReport {
  files: Record<string, {
    source: string;
    mutants: {
      mutatorName: string;
      replacement?: string;
      status: string;
      location: {
        start: { line: number; column: number };
        end: { line: number; column: number };
      };
    }[];
  }>;
}

/** A surviving mutant that no test can kill, because it changes no behaviour. */
export interface EquivalentMutant {
  file: string;
  mutator: string;
  /** The mutated source text, whitespace collapsed. */
  original: string;
  replacement: string;
  why: string;
}

export interface Survivor {
  file: string;
  line: number;
  mutator: string;
  original: string;
  replacement: string;
  /** Set when the mutant is listed as equivalent. */
  why?: string;
}

export interface Counts {
  killed: number;
  timeout: number;
  survived: number;
  noCoverage: number;
  errors: number;
}

export interface ModuleResult {
  module: MutationModule;
  meta: {
    commit: string;
    dirty: boolean;
    date: string;
    seconds: number;
    concurrency: number;
  };
  counts: Counts;
  score: number;
  survivors: Survivor[];
}

/** Collapses runs of white space so a match survives reformatting. */
export function squash(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function sliceSource(
  source: string,
  loc: StrykerReport["files"][string]["mutants"][number]["location"],
): string {
  const lines = source.split("\n");
  if (loc.start.line === loc.end.line) {
    return lines[loc.start.line - 1].slice(
      loc.start.column - 1,
      loc.end.column - 1,
    );
  }
  return [
    lines[loc.start.line - 1].slice(loc.start.column - 1),
    ...lines.slice(loc.start.line, loc.end.line - 1),
    lines[loc.end.line - 1].slice(0, loc.end.column - 1),
  ].join("\n");
}

/**
 * Counts a report's mutants by outcome and lists its survivors (survived or not
 * covered), each with the explanation of the equivalent mutant it matches by
 * file, mutator, original text and replacement.
 */
export function summarize(
  report: StrykerReport,
  equivalents: EquivalentMutant[],
): { counts: Counts; score: number; survivors: Survivor[] } {
  const counts: Counts = {
    killed: 0,
    timeout: 0,
    survived: 0,
    noCoverage: 0,
    errors: 0,
  };
  const survivors: Survivor[] = [];
  for (const [file, { source, mutants }] of Object.entries(report.files)) {
    for (const m of mutants) {
      if (m.status === "Killed") counts.killed++;
      else if (m.status === "Timeout") counts.timeout++;
      else if (m.status === "Survived" || m.status === "NoCoverage") {
        if (m.status === "Survived") counts.survived++;
        else counts.noCoverage++;
        const original = squash(sliceSource(source, m.location));
        const replacement = squash(m.replacement ?? "");
        const why = equivalents.find((e) =>
          e.file === file && e.mutator === m.mutatorName &&
          squash(e.original) === original &&
          squash(e.replacement) === replacement
        )?.why;
        survivors.push({
          file,
          line: m.location.start.line,
          mutator: m.mutatorName,
          original,
          replacement,
          ...(why ? { why } : {}),
        });
      } else counts.errors++;
    }
  }
  const detected = counts.killed + counts.timeout;
  const valid = detected + counts.survived + counts.noCoverage;
  return {
    counts,
    score: valid === 0 ? 100 : (100 * detected) / valid,
    survivors,
  };
}

function code(text: string, max = 90): string {
  const short = text.length > max ? `${text.slice(0, max - 1)}…` : text;
  return `\`${short.replaceAll("`", "'")}\``;
}

/**
 * A module's row and survivor lines as a committed `docs/mutation.md` holds
 * them, verbatim: what a run that does not measure the module keeps.
 */
export interface CommittedModule {
  name: string;
  row: string;
  /** The run's time, from the row, for the total. */
  seconds: number;
  survivors: string[];
}

/** Every module's row and survivors section in a summary `summaryMarkdown()` wrote. */
export function committedModules(markdown: string): Map<string, CommittedModule> {
  const modules = new Map<string, CommittedModule>();
  let section: CommittedModule | undefined;
  for (const line of markdown.split("\n")) {
    const row = /^\| (\S+) \|.* \| (\d+) s \(concurrency \d+\) \|/.exec(line);
    const heading = /^## Survivors: (\S+)$/.exec(line);
    if (row) {
      modules.set(row[1], { name: row[1], row: line, seconds: Number(row[2]), survivors: [] });
    } else if (heading) section = modules.get(heading[1]);
    else if (line.startsWith("#")) section = undefined;
    else if (section && line.startsWith("- ")) section.survivors.push(line);
  }
  return modules;
}

function resultRow(r: ModuleResult): string {
  const explained = r.survivors.filter((s) => s.why).length;
  return `| ${r.module.name} | ${
    r.module.mutate.map((f) => f.replace(/^lib\//, "").replace("#", " ")).join(", ")
  } | ${r.score.toFixed(1)} % | ${r.counts.killed} | ${r.counts.timeout} | ${
    r.counts.survived + r.counts.noCoverage
  } | ${explained} | ${
    r.survivors.length - explained
  } | ${r.meta.seconds} s (concurrency ${r.meta.concurrency}) | ${r.meta.commit}${
    r.meta.dirty ? " + uncommitted changes" : ""
  } | ${r.meta.date} |`;
}

function survivorLine(s: Survivor): string {
  return `- ${s.file}:${s.line} ${s.mutator} ${code(s.original)} → ${code(s.replacement)}: ${
    s.why ?? "**unexplained: kill it with a test or list it as equivalent**"
  }`;
}

/**
 * The markdown of `docs/mutation.md`, a row per name of `order`: from this
 * run's result where it has one, else the row and survivors that `previous`
 * (the committed summary) holds, so a run of one module keeps the others'
 * measurements; a module in neither is left out.
 */
export function summaryMarkdown(
  order: string[],
  results: ModuleResult[],
  previous = "",
): string {
  const committed = committedModules(previous);
  const modules = order.flatMap((name) => {
    const r = results.find((r) => r.module.name === name);
    if (r) {
      return [{
        name,
        row: resultRow(r),
        seconds: r.meta.seconds,
        survivors: r.survivors.map(survivorLine),
      }];
    }
    return committed.has(name) ? [committed.get(name)!] : [];
  });
  const out = [
    "# Mutation testing of the pure core",
    "",
    "Generated by `deno task mutate` (StrykerJS under Deno, its command runner running each",
    "module's unit tests with `deno test --no-check`); do not edit by hand. `deno task mutate",
    "MODULE...` re-runs those modules and keeps the other modules' rows and survivors as they",
    "were; reports (JSON, HTML) land in the git-ignored `reports/mutation/`. The score is",
    "Stryker's: detected (killed or timed out) over all valid mutants, so equivalent mutants",
    "count against it. Every survivor is either killed by a new test or explained in",
    "`tests/mutation/equivalent.json` (file, mutator, original text, replacement, one line of",
    "why). Not part of the normal test command.",
    "",
    "| module | files | score | killed | timeout | survived | equivalent | unexplained | time | commit | date |",
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ...modules.map((m) => m.row),
  ];
  const total = modules.reduce((s, m) => s + m.seconds, 0);
  out.push("", `All modules together: ${total} s.`);
  for (const m of modules) {
    if (m.survivors.length === 0) continue;
    out.push("", `## Survivors: ${m.name}`, "", ...m.survivors);
  }
  return out.join("\n") + "\n";
}
