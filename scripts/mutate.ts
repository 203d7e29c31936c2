/**
 * `deno task mutate [MODULE...] [--concurrency N]`: mutation testing of the
 * pure core with StrykerJS, one module at a time (mutate one module, run only
 * its unit tests), then `docs/mutation.md` with the modules just run from their
 * reports and every other module's row and survivors kept from the committed
 * file. `--summary-only [MODULE...]` runs nothing and rewrites the named
 * modules' rows (default: every module with a report here) from their reports,
 * as after an edit of `equivalent.json`.
 *
 * StrykerJS is installed by npm into `tests/mutation/` (its own package.json
 * and lock) and run by Deno, because Debian's Node 20 is too old for it. Its
 * command runner runs `deno test --no-check`: the instrumented code is not
 * type-correct. Reports (JSON, HTML) go to the git-ignored `reports/mutation/`.
 * A surviving mutant is either killed by a new test or listed, with one line of
 * why, in `tests/mutation/equivalent.json`; the summary marks any other as
 * unexplained.
 */
import { MODULES, type MutationModule } from "../tests/mutation/modules.ts";
import {
  type EquivalentMutant,
  type ModuleResult,
  type StrykerReport,
  summarize,
  summaryMarkdown,
} from "../tests/mutation/summary.ts";

const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const toolDir = `${root}/tests/mutation`;
const reportDir = `${root}/reports/mutation`;
const stryker = `${toolDir}/node_modules/@stryker-mutator/core/bin/stryker.js`;

async function run(cmd: string[], cwd: string): Promise<void> {
  const { code } = await new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    cwd,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (code !== 0) {
    throw new Error(`${cmd.join(" ")} failed with exit code ${code}`);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

async function git(...args: string[]): Promise<string> {
  const out = await new Deno.Command("git", {
    args,
    cwd: root,
    stdout: "piped",
  }).output();
  return new TextDecoder().decode(out.stdout).trim();
}

/**
 * Stryker's form of a `file#function` entry: the lines of that top-level
 * function (from `export function name(` to the next line that is `}`), so a
 * module can be one function of a larger file and still follow its edits.
 */
async function mutateRange(entry: string): Promise<string> {
  const [file, fn] = entry.split("#");
  if (fn === undefined) return entry;
  const lines = (await Deno.readTextFile(`${root}/${file}`)).split("\n");
  const start = lines.findIndex((l) =>
    new RegExp(`^(export )?(async )?function ${fn}[<(]`).test(l)
  );
  const end = lines.findIndex((l, i) => i > start && l === "}");
  if (start < 0 || end < 0) throw new Error(`No top-level function ${fn} in ${file}`);
  return `${file}:${start + 1}-${end + 1}`;
}

function strykerConfig(
  m: MutationModule,
  mutate: string[],
  concurrency: number,
): Record<string, unknown> {
  return {
    testRunner: "command",
    commandRunner: {
      command: `deno test --no-check -A --no-prompt --fail-fast ${m.tests.join(" ")}`,
    },
    mutate,
    // The command runner cannot tell which test covers which mutant.
    coverageAnalysis: "off",
    concurrency,
    reporters: ["json", "html", "clear-text", "progress"],
    jsonReporter: { fileName: `reports/mutation/${m.name}.json` },
    htmlReporter: { fileName: `reports/mutation/${m.name}.html` },
    tempDirName: "tests/mutation/.stryker-tmp",
    // The sandbox needs only the code, the test helpers, and Deno's config and lock.
    ignorePatterns: [
      "/*",
      "!/lib",
      "!/tests",
      "/tests/*",
      "!/tests/helpers",
      "!/tests/netcheck",
      "!/deno.json",
      "!/deno.lock",
    ],
    plugins: [],
    cleanTempDir: true,
  };
}

async function mutateModule(
  m: MutationModule,
  concurrency: number,
): Promise<void> {
  const configPath = `${reportDir}/${m.name}.config.json`;
  const mutate = await Promise.all(m.mutate.map(mutateRange));
  await Deno.writeTextFile(
    configPath,
    JSON.stringify(strykerConfig(m, mutate, concurrency), null, 2),
  );
  // The code Stryker copies into its sandbox is the code as it is now.
  const commit = await git("rev-parse", "--short", "HEAD");
  const changed = await git(
    "status",
    "--porcelain",
    "--",
    ...m.mutate.map((e) => e.split("#")[0]),
    ...m.tests,
  );
  const started = Date.now();
  await run([
    "deno",
    "run",
    "-A",
    "--node-modules-dir=manual",
    stryker,
    "run",
    configPath,
  ], root);
  const meta = {
    commit,
    dirty: changed !== "",
    date: new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC",
    seconds: Math.round((Date.now() - started) / 1000),
    concurrency,
  };
  await Deno.writeTextFile(
    `${reportDir}/${m.name}.meta.json`,
    JSON.stringify(meta),
  );
}

const USAGE = "deno task mutate [MODULE...] [--concurrency N] | --summary-only [MODULE...]";

async function main(args: string[]): Promise<void> {
  let concurrency = 1;
  let summaryOnly = false;
  const names: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--concurrency") concurrency = Number(args[++i]);
    else if (args[i] === "--summary-only") summaryOnly = true;
    else if (args[i] === "--help" || args[i] === "-h") {
      console.log(`${USAGE}\nmodules: ${MODULES.map((m) => m.name).join(", ")}`);
      return;
    } else names.push(args[i]);
  }
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError(
      `--concurrency must be a whole number of at least 1: ${concurrency}`,
    );
  }
  const unknown = names.filter((n) => !MODULES.some((m) => m.name === n));
  if (unknown.length > 0) {
    throw new Error(
      `Unknown module ${unknown.join(", ")}: choose from ${MODULES.map((m) => m.name).join(", ")}`,
    );
  }
  const named = names.length === 0 ? MODULES : MODULES.filter((m) => names.includes(m.name));
  const measured = summaryOnly ? [] : named;
  await Deno.mkdir(reportDir, { recursive: true });
  if (measured.length > 0 && !(await exists(stryker))) {
    await run(
      ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
      toolDir,
    );
  }
  for (const m of measured) await mutateModule(m, concurrency);

  const equivalents: EquivalentMutant[] = JSON.parse(
    await Deno.readTextFile(`${toolDir}/equivalent.json`),
  );
  const results: ModuleResult[] = [];
  for (const m of named) {
    if (!(await exists(`${reportDir}/${m.name}.json`))) continue;
    const report: StrykerReport = JSON.parse(
      await Deno.readTextFile(`${reportDir}/${m.name}.json`),
    );
    const meta = JSON.parse(
      await Deno.readTextFile(`${reportDir}/${m.name}.meta.json`),
    );
    results.push({ module: m, meta, ...summarize(report, equivalents) });
  }
  const docPath = `${root}/docs/mutation.md`;
  const previous = (await exists(docPath)) ? await Deno.readTextFile(docPath) : "";
  await Deno.writeTextFile(
    docPath,
    summaryMarkdown(MODULES.map((m) => m.name), results, previous),
  );
  const unexplained = results.flatMap((r) => r.survivors.filter((s) => !s.why));
  console.log(
    `docs/mutation.md written: ${results.length} modules from reports (${
      results.map((r) => r.module.name).join(", ") || "none"
    }), the others as they were; ${unexplained.length} unexplained survivors among them`,
  );
}

if (import.meta.main) await main(Deno.args);
