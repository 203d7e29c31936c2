/**
 * Every page's problems, by check, found in one pass on import: the flags, environment variables,
 * chart keys, metrics, Event reasons, commands, files and links a page names that do not exist.
 * Each tests/docs_*_test.ts registers the checks of its concern with pagesNameNothingMissing().
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { chartKey, valueAt, VALUES } from "./docs_chart_values.ts";
import { EVENT_REASONS, KUBERNETES_REASONS, namedEventReasons } from "./docs_events.ts";
import { flagProblem } from "./docs_flags.ts";
import { commandProblems, HELP, LACE_FLAGS } from "./docs_lace_help.ts";
import { codeSpans, headingAnchors, laceInvocations, localLinks } from "./docs_markup.ts";
import { BPF_SOURCE, metricProblem, METRICS } from "./docs_metrics.ts";
import { BUILD_OUTPUTS, type Page, PAGES, REPO } from "./docs_pages.ts";

/** Every source file's text, for names the code must still contain. */
export const SOURCES = (() => {
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

/** Every page's problems, in the order of PAGES. */
export const PROBLEMS = PAGES.map(pageProblems);

/** The checks pageProblems() makes. */
export type Check =
  | "flags"
  | "envs"
  | "chart"
  | "metrics"
  | "events"
  | "commands"
  | "paths"
  | "links";

/** The fewest names each check sees in today's pages: fewer means the markup was misread. */
const AT_LEAST: Record<Check, number> = {
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
const NAMES: Record<Check, string> = {
  flags: "flags",
  envs: "environment variables",
  chart: "chart keys",
  metrics: "metrics or metric labels",
  events: "Event reasons",
  commands: "commands, subcommands or command flags",
  paths: "files",
  links: "link targets or anchors",
};

/** Registers the test that no page names a missing one of `check`'s names, and saw enough. */
export function pagesNameNothingMissing(check: Check): void {
  Deno.test(`the README and docs name no ${NAMES[check]} that do not exist`, () => {
    assert.ok(
      (CHECKED[check] ?? 0) >= AT_LEAST[check],
      `only ${CHECKED[check] ?? 0} ${check} found in the pages: is the markup still read?`,
    );
    assert.deepEqual(PROBLEMS.flatMap((p) => p[check]), []);
  });
}
